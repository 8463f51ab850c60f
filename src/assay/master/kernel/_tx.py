"""A unit of orchestration: one database transaction plus the side effects it decided on.

Handlers change rows through ``tx.session`` and *record* what must happen outside the database
(start a process on an agent, wake a long-poll) with ``tx.act``. The master performs those actions
only after the transaction commits, so every state change is durable before it is acted on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from assay.db import Session
from assay.master.kernel._searchers import SearcherCache
from assay.protocol import Start


@dataclass(frozen=True)
class StartAllocation:
    agent_id: str
    message: Start


@dataclass(frozen=True)
class KillAllocation:
    agent_id: str
    allocation_id: str


@dataclass(frozen=True)
class PreemptAllocation:
    """Tell the agent its part of the allocation is asked to stop (its trial watches through
    the agent's relay)."""

    agent_id: str
    allocation_id: str


@dataclass(frozen=True)
class Wake:
    """Wake the long-polls waiting on ``key``: ``("op", trial_id)``, ``("preempt", alloc_id)``."""

    key: tuple[Any, ...]


@dataclass(frozen=True)
class Reschedule:
    """Run a scheduling pass soon: something queued, or slots came free."""


@dataclass(frozen=True)
class ExperimentEnded:
    experiment_id: int


@dataclass(frozen=True)
class AllocationEnded:
    """The allocation is TERMINATED: its token no longer proves anything."""

    allocation_id: str


Action = (
    StartAllocation
    | KillAllocation
    | PreemptAllocation
    | Wake
    | Reschedule
    | ExperimentEnded
    | AllocationEnded
)


T = TypeVar("T")


class Transactor(Protocol):
    """Runs handlers as transactions: all a part of the master needs that only changes rows."""

    async def transact(self, handler: Callable[..., T], *args: Any) -> T: ...


@dataclass
class Tx:
    session: Session
    now: float
    searchers: SearcherCache
    actions: list[Action] = field(default_factory=list)
    touched: set[int] = field(default_factory=set)
    """Experiments whose in-memory searcher this transaction changed (reloaded on rollback)."""

    def act(self, action: Action) -> None:
        if action not in self.actions:
            self.actions.append(action)
