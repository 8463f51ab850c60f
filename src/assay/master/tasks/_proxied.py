"""Where the master's proxy (``/proxy/<task id>/``) reaches a task that serves HTTP, and who may
reach it: anyone signed in for a TensorBoard, only the owner and admins for a notebook (whose
JupyterLab runs code as its owner). A notebook's own token goes with every request the proxy
passes on, so JupyterLab answers the proxy only."""

from __future__ import annotations

from dataclasses import dataclass

from assay.config import NOTEBOOK_PORT, NOTEBOOK_TOKEN_ENV, PROXY_PREFIX, JobSpecKind
from assay.db import Session, tasks
from assay.errors import Conflict, Forbidden, NotFound
from assay.master.identity import Actor
from assay.protocol import TaskInstanceState, TaskState

PORT_LABEL = "http"
"""The label of the port a proxied task listens on (a notebook's is the same)."""
assert NOTEBOOK_PORT == PORT_LABEL
_NOUNS = {JobSpecKind.TENSORBOARD.value: "TensorBoard", JobSpecKind.NOTEBOOK.value: "notebook"}
_OWNERS_ONLY = frozenset({JobSpecKind.NOTEBOOK.value})
"""Kinds that run their owner's code on request: only the owner and admins reach them."""


def proxy_path(task_id: int) -> str:
    return f"{PROXY_PREFIX}/{task_id}/"


@dataclass(frozen=True)
class ProxyTarget:
    host: str
    port: int
    what: str
    """How the task is named to users: ``TensorBoard 7``, ``notebook 8``."""
    headers: tuple[tuple[str, str], ...] = ()
    """Headers the proxy adds to what it passes on."""


def proxy_target(session: Session, actor: Actor, task_id: int) -> ProxyTarget:
    """Where the proxy reaches task ``task_id`` for ``actor``: its instance's host and reserved
    port. :class:`NotFound` for a task the proxy does not serve, :class:`Forbidden` for a
    notebook of another user's, :class:`Conflict` for one that does not run now."""
    task = tasks.get(session, task_id)
    if task is None or task.kind not in _NOUNS:
        raise NotFound(
            f"nothing is served at {proxy_path(task_id)}: no TensorBoard or notebook {task_id} "
            "(`assay tensorboard list`, `assay notebook list`)"
        )
    noun = _NOUNS[task.kind]
    what = f"{noun} {task_id}"
    listing = f"`assay {noun.lower()} list` shows its state"
    if task.kind in _OWNERS_ONLY and not actor.may_change(task.owner):
        raise Forbidden(
            f"{what} belongs to {task.owner}; only its owner or an admin may open it "
            f"(you are signed in as {actor.username})"
        )
    headers: tuple[tuple[str, str], ...] = ()
    if task.kind == JobSpecKind.NOTEBOOK:
        token = ((task.spec or {}).get("env") or {}).get(NOTEBOOK_TOKEN_ENV, "")
        headers = (("authorization", f"token {token}"),)
    for inst in tasks.instances(session, task_id):
        ports = (inst.ports or {}).get(PORT_LABEL) or []
        if inst.live and inst.state == TaskInstanceState.RUNNING and inst.host and ports:
            return ProxyTarget(inst.host, int(ports[0]), what, headers)
    if TaskState(task.state).terminal:
        raise Conflict(f"{what} has ended ({task.state}): {task.message}")
    raise Conflict(f"{what} is {task.state}, not running yet; try again shortly ({listing})")
