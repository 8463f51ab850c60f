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
from assay.config import NOTEBOOK_TOKEN_ENV, JobSpec, JobSpecKind
from assay.db import Session, Task, tasks
from assay.errors import InvalidRequest, NotFound
from assay.master.identity import Actor
from assay.master.kernel import Orchestrator, Tx
from assay.master.tasks import _lifecycle as life
from assay.master.tasks._proxied import proxy_path
from assay.master.tasks._service import TaskService
from assay.protocol import TaskState


class NotebookService:
    def __init__(self, core: Orchestrator, task_service: TaskService) -> None:
        self.core = core
        self.task_service = task_service

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

    async def get(self, task_id: int) -> rest.Notebook:
        def read(session: Session) -> rest.Notebook:
            return view(session, _require(session, task_id))

        return await self.core.read(read)

    async def listing(self, *, active_only: bool = True) -> rest.NotebookList:
        def read(session: Session) -> rest.NotebookList:
            rows = tasks.listing(session, active_only=active_only, kind=JobSpecKind.NOTEBOOK)
            return rest.NotebookList(notebooks=[view(session, t) for t in rows])

        return await self.core.read(read)

    async def kill(self, actor: Actor, task_id: int) -> rest.Notebook:
        """Stop it (its owner or an admin); one that has ended already is answered as it is."""

        def handler(tx: Tx) -> rest.Notebook:
            task = _require(tx.session, task_id)
            if not TaskState(task.state).terminal:
                life.stop_task(tx, task_id, actor)
            return view(tx.session, task)

        return await self.core.transact(handler)


def _require(session: Session, task_id: int) -> Task:
    task = tasks.get(session, task_id)
    if task is None or task.kind != JobSpecKind.NOTEBOOK:
        raise NotFound(f"notebook {task_id} not found (`assay notebook list --all`)")
    return task


def view(session: Session, task: Task) -> rest.Notebook:
    spec = task.spec or {}
    params = spec.get("parameters") or {}
    roles = spec.get("roles") or [{}]
    insts = tasks.instances(session, task.id)
    ready = any(i.live and i.started for i in insts) and not TaskState(task.state).terminal
    timeout = params.get("idle_timeout")
    return rest.Notebook(
        id=task.id,
        name=task.name,
        state=TaskState(task.state),
        user=task.owner,
        url=proxy_path(task.id),
        ready=ready,
        slots=int(roles[0].get("slots", 0)),
        resource_pool=str(spec.get("pool") or ""),
        idle_timeout=None if timeout is None else float(timeout),
        idle_type=str(params.get("idle_type", "")),
        message=task.message,
        notes=list(spec.get("notes") or []),
        created_at=task.created_at,
        ended_at=task.ended_at,
    )
