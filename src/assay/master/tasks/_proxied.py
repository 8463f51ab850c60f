"""Where the master reaches a task that serves something, and who may reach it: the proxy
(``/proxy/<task id>/``) a TensorBoard's or a notebook's HTTP, the tunnel a shell's sshd.
Anyone signed in may reach a TensorBoard; only the owner and admins a notebook or a shell (which
run code as their owner). A notebook's own token goes with every request the proxy passes on,
so JupyterLab answers the proxy only."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from assay.config import NOTEBOOK_PORT, PROXY_PREFIX, SHELL_PORT, JobSpecKind
from assay.db import Session, tasks
from assay.errors import Conflict, Forbidden, NotFound
from assay.master.identity import Actor
from assay.protocol import NOTEBOOK_TOKEN_ENV, TaskInstanceState, TaskState

PORT_LABEL = "http"
"""The label of the port a TensorBoard listens on (a notebook's is the same)."""
assert NOTEBOOK_PORT == PORT_LABEL
HTTP_KINDS = frozenset({JobSpecKind.TENSORBOARD, JobSpecKind.NOTEBOOK})
"""What the proxy serves."""
TUNNEL_KINDS = frozenset({JobSpecKind.SHELL})
"""What the tunnel reaches."""
_PORTS = {
    JobSpecKind.TENSORBOARD: PORT_LABEL,
    JobSpecKind.NOTEBOOK: NOTEBOOK_PORT,
    JobSpecKind.SHELL: SHELL_PORT,
}
_NOUNS = {
    JobSpecKind.TENSORBOARD: "TensorBoard",
    JobSpecKind.NOTEBOOK: "notebook",
    JobSpecKind.SHELL: "shell",
}
_OWNERS_ONLY = frozenset({JobSpecKind.NOTEBOOK, JobSpecKind.SHELL})
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


def proxy_target(
    session: Session, actor: Actor, task_id: int, kinds: Collection[JobSpecKind] = HTTP_KINDS
) -> ProxyTarget:
    """Where the master reaches task ``task_id`` (one of ``kinds``) for ``actor``: its
    instance's host and reserved port. :class:`NotFound` for a task of another kind,
    :class:`Forbidden` for a notebook or shell of another user's, :class:`Conflict` for one that
    does not run now."""
    task = tasks.get(session, task_id)
    if task is None or task.kind not in kinds:
        nouns = sorted(_NOUNS[k] for k in kinds)
        listings = ", ".join(f"`assay {n.lower()} list`" for n in nouns)
        raise NotFound(
            f"no {' or '.join(nouns)} {task_id} (or nothing of it is served here): {listings}"
        )
    kind = JobSpecKind(task.kind)
    noun = _NOUNS[kind]
    what = f"{noun} {task_id}"
    listing = f"`assay {noun.lower()} list` shows its state"
    if kind in _OWNERS_ONLY and not actor.may_change(task.owner):
        raise Forbidden(
            f"{what} belongs to {task.owner}; only its owner or an admin may open it "
            f"(you are signed in as {actor.username})"
        )
    headers: tuple[tuple[str, str], ...] = ()
    if kind == JobSpecKind.NOTEBOOK:
        token = ((task.spec or {}).get("env") or {}).get(NOTEBOOK_TOKEN_ENV, "")
        headers = (("authorization", f"token {token}"),)
    for inst in tasks.instances(session, task_id):
        ports = (inst.ports or {}).get(_PORTS[kind]) or []
        if inst.live and inst.state == TaskInstanceState.RUNNING and inst.host and ports:
            return ProxyTarget(inst.host, int(ports[0]), what, headers)
    if TaskState(task.state).terminal:
        raise Conflict(f"{what} has ended ({task.state}): {task.message}")
    raise Conflict(f"{what} is {task.state}, not running yet; try again shortly ({listing})")
