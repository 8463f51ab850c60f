"""Notebooks: JupyterLab as a task of one instance on a slot (or none, ``resources.slots: 0``),
in its uploaded context directory, reached only through the master's proxy at
``/proxy/<task id>/`` by its owner and admins (:mod:`._proxied`).

The master makes each notebook a token of its own, kept in the task's spec as a secret variable
(masked in its logs, never answered): JupyterLab takes requests with it only, and only the proxy
sends it. Idleness is judged inside the task, by assay's launcher (``assay.notebooks``), which
ends JupyterLab once it has been idle for ``idle_timeout``; the task then ends and frees its
slot as any task does.
"""

from __future__ import annotations

import secrets

from assay import rest
from assay.config import JobSpec, JobSpecKind
from assay.db import Session, Task
from assay.errors import InvalidRequest
from assay.master.identity import Actor
from assay.master.tasks._proxied import proxy_path
from assay.master.tasks._served import ServedTasks, common_fields
from assay.protocol import NOTEBOOK_TOKEN_ENV


class NotebookService(ServedTasks[rest.Notebook]):
    kind = JobSpecKind.NOTEBOOK
    noun = "notebook"

    async def start(self, actor: Actor, spec: JobSpec, context: bytes | None) -> rest.Notebook:
        """Queue the notebook ``spec`` (from :func:`assay.config.load_notebook_config`) as a
        task of ``actor``'s, starting in ``context`` (a tar.gz) or an empty directory."""
        if spec.kind != JobSpecKind.NOTEBOOK:
            raise InvalidRequest(f"not a notebook's spec: a {spec.kind.value}")
        token = secrets.token_urlsafe(32)
        spec = spec.model_copy(
            update={
                "env": {**spec.env, NOTEBOOK_TOKEN_ENV: token},
                "secret_env": sorted({*spec.secret_env, NOTEBOOK_TOKEN_ENV}),
            }
        )
        task = await self.task_service.submit(actor, spec, context)
        return await self.get(task.id)

    async def listing(self, *, active_only: bool = True) -> rest.NotebookList:
        return rest.NotebookList(notebooks=await self.views(active_only=active_only))

    def view(self, session: Session, task: Task) -> rest.Notebook:
        params = (task.spec or {}).get("parameters") or {}
        timeout = params.get("idle_timeout")
        return rest.Notebook(
            **common_fields(session, task),
            url=proxy_path(task.id),
            idle_timeout=None if timeout is None else float(timeout),
            idle_type=str(params.get("idle_type", "")),
        )
