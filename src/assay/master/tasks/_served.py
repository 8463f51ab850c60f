"""What notebooks and shells share as kinds of task a user starts and reaches through the
master: reading one (by its kind, or :class:`NotFound`), listing them, killing one."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from assay.config import JobSpecKind
from assay.db import Session, Task, tasks
from assay.errors import NotFound
from assay.master.identity import Actor
from assay.master.kernel import Orchestrator, Tx
from assay.master.tasks import _lifecycle as life
from assay.master.tasks._service import TaskService
from assay.protocol import TaskState

View = TypeVar("View")


class ServedTasks(Generic[View]):
    """Tasks of one ``kind``, each answered as a ``View`` (:meth:`view`)."""

    kind: JobSpecKind
    noun: str

    def __init__(self, core: Orchestrator, task_service: TaskService) -> None:
        self.core = core
        self.task_service = task_service

    def view(self, session: Session, task: Task) -> View:
        raise NotImplementedError

    def require(self, session: Session, task_id: int) -> Task:
        task = tasks.get(session, task_id)
        if task is None or task.kind != self.kind:
            raise NotFound(f"{self.noun} {task_id} not found (`assay {self.noun} list --all`)")
        return task

    async def get(self, task_id: int) -> View:
        return await self.core.read(lambda s: self.view(s, self.require(s, task_id)))

    async def views(self, *, active_only: bool = True) -> list[View]:
        """Newest first; those not ended unless ``active_only`` is False."""

        def read(session: Session) -> list[View]:
            rows = tasks.listing(session, active_only=active_only, kind=self.kind)
            return [self.view(session, t) for t in rows]

        return await self.core.read(read)

    async def kill(self, actor: Actor, task_id: int) -> View:
        """Stop it (its owner or an admin); one that has ended already is answered as it is."""

        def handler(tx: Tx) -> View:
            task = self.require(tx.session, task_id)
            if not TaskState(task.state).terminal:
                life.stop_task(tx, task_id, actor)
            return self.view(tx.session, task)

        return await self.core.transact(handler)


def common_fields(session: Session, task: Task) -> dict[str, Any]:
    """The fields of :class:`rest.ServedTask` of ``task``."""
    spec = task.spec or {}
    roles = spec.get("roles") or [{}]
    insts = tasks.instances(session, task.id)
    return {
        "id": task.id,
        "name": task.name,
        "state": TaskState(task.state),
        "user": task.owner,
        "ready": any(i.live and i.started for i in insts) and not TaskState(task.state).terminal,
        "slots": int(roles[0].get("slots", 0)),
        "resource_pool": str(spec.get("pool") or ""),
        "message": task.message,
        "notes": list(spec.get("notes") or []),
        "created_at": task.created_at,
        "ended_at": task.ended_at,
    }
