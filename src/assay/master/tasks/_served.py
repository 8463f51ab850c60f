"""What notebooks and shells share as kinds of task a user starts and reaches through the
master: reading one (by its kind, or :class:`NotFound`), listing them, killing one."""

from __future__ import annotations

from typing import Generic, TypeVar

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


def ready(session: Session, task: Task) -> bool:
    """Whether the task's process has started and it has not ended."""
    insts = tasks.instances(session, task.id)
    return any(i.live and i.started for i in insts) and not TaskState(task.state).terminal


def first_role_slots(task: Task) -> int:
    roles = (task.spec or {}).get("roles") or [{}]
    return int(roles[0].get("slots", 0))
