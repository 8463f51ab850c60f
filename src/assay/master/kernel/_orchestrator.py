"""What every part of the master shares: the database, one lock, the searchers, the agent hub
and the long-polls; and the one way to change anything: a handler run as a transaction.

A handler runs under the lock, in one transaction on a worker thread; the actions it records
(start a process, wake a long-poll, collect an ended experiment's checkpoints) are performed
only after the commit, so every state change is durable before it is acted on.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Generic, Protocol, TypeVar

from assay import rest
from assay.db import Database, Session
from assay.db import changes as db_changes
from assay.errors import MasterUnreachable
from assay.master.kernel import _views as views
from assay.master.kernel._agents import AgentHub, AgentView
from assay.master.kernel._callers import Caller, CallerCache
from assay.master.kernel._events import EventHub
from assay.master.kernel._group_commit import GroupCommit
from assay.master.kernel._measures import Measures
from assay.master.kernel._searchers import SearcherCache
from assay.master.kernel._storage_access import StorageAccess
from assay.master.kernel._tx import (
    Action,
    AllocationEnded,
    ExperimentEnded,
    KillAllocation,
    PreemptAllocation,
    Reschedule,
    StartAllocation,
    Tx,
    Wake,
)
from assay.master.kernel._waiters import Waiters
from assay.protocol import Kill, Preempt, TrialEnv
from assay.protocol import trace_mark as mark

log = logging.getLogger(__name__)

MERGED_MAX = 64
"""The most items one :meth:`Orchestrator.transact_merged` transaction takes."""

T = TypeVar("T")
R = TypeVar("R")
I = TypeVar("I")  # noqa: E741
"""What a scheduling pass answers (the allocations package's ``PassResult``)."""


class Orchestrator:
    def __init__(
        self,
        db: Database,
        searchers: SearcherCache,
        storage: StorageAccess,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.db = db
        self.group_commit = GroupCommit(db)
        self.searchers = searchers
        self.storage = storage
        """How far into experiments' checkpoint storage the master may reach."""
        self.clock = clock
        self.lock = asyncio.Lock()
        self.hub = AgentHub()
        self.waiters = Waiters()
        self.callers = CallerCache()
        """The harness's tokens already checked (forgotten when their allocation ends)."""
        self.events = EventHub()
        """What live viewers (the web UI) are told: changes as they commit."""
        self.measures = Measures()
        """This master's Prometheus metrics, which its parts count and time into."""
        self.cluster_id = ""
        self.started_at = clock()
        self.wakeup = asyncio.Event()
        """Set to run a scheduling pass soon."""
        self.stopping = False
        self.draining_until = 0.0
        """Until when nothing new is started: the cluster is being stopped (``assay down``).
        Held in memory, and only a while after the last ask: a master started again, or one
        whose stop was abandoned midway, schedules as usual, so nothing is left stuck."""
        self._work: set[asyncio.Task[Any]] = set()
        self.after_experiment_ended: list[Callable[[int], Coroutine[Any, Any, Any]]] = []
        """Run in the background once an experiment's end is committed (its checkpoints'
        collection, which the artifacts part sets: a room above the kernel, so it hooks in)."""
        self._merging: dict[Callable[..., Any], list[tuple[Any, asyncio.Future[Any]]]] = {}
        self.scheduler: InlineScheduler[Any] | None = None
        """Runs the scheduling pass in a transaction that may free slots (the master's loops
        set it)."""

    async def transact(self, handler: Callable[..., T], *args: Any, schedule: bool = False) -> T:
        """``handler(tx, *args)`` in one transaction under the lock; its actions after the
        commit. On a failure nothing is written, and the searchers it touched are reloaded
        from the last committed snapshot.

        ``schedule``: when the handler asks for a pass (it freed slots, say), the pass runs in
        the same transaction, so the slots go to the next in line without a second commit or
        a wait for the scheduling loop. Should the pass fail, the handler's work is committed
        without it and the loop's next pass tries again."""
        async with self.lock:
            result, actions = await self._locked(handler, args, schedule)
        await self._perform(actions)
        return result

    async def _locked(
        self, handler: Callable[..., T], args: tuple[Any, ...], schedule: bool
    ) -> tuple[T, list[Action]]:
        """:meth:`transact`'s transaction, the lock held: its result and the actions to perform
        once the lock is released."""
        now = self.clock()
        holder: dict[str, Tx] = {}
        passed: list[Any] = []
        published: list[rest.EventBatch] = []
        # A stopping master starts nothing; one draining leaves the queue to the next.
        scheduler = self.scheduler if schedule and not (self.draining or self.stopping) else None
        agents = self.hub.connected_views() if scheduler is not None else []

        def run(session: Session, scheduler: InlineScheduler[Any] | None) -> T:
            tx = Tx(session=session, now=now, searchers=self.searchers)
            holder["tx"] = tx
            db_changes.track(session)
            result = handler(tx, *args)
            if scheduler is not None and Reschedule() in tx.actions:
                passed.append(_pass_in(scheduler, tx, agents))
            published.append(views.changes(session))
            return result

        try:
            try:
                result = await self.db.run(lambda session: run(session, scheduler))
            except _PassFailed as failed:
                log.error("scheduling pass failed", exc_info=failed.__cause__)
                self._forget_touched(holder)
                passed.clear()
                published.clear()
                result = await self.db.run(lambda session: run(session, None))
        except BaseException:
            self._forget_touched(holder)
            raise
        actions = holder["tx"].actions
        # Still under the lock: viewers get the batches in the order they were committed.
        for batch in published:
            self.events.publish(batch)
        self._know_started(actions)
        if scheduler is not None and passed:
            scheduler.committed(passed[0])
        return result, actions

    async def transact_merged(
        self,
        handler_many: Callable[[Tx, list[I]], Sequence[R | Exception]],
        item: I,
        *,
        schedule: bool = False,
    ) -> R:
        """:meth:`transact` for handlers of one kind asked for at once (checkpoints registered
        by thousands of trials): every item asked for while the lock is held goes into one
        call of ``handler_many(tx, items)``, in one transaction, where each would have waited
        for the lock and committed alone. A result that is an exception is raised to its
        item's caller alone (refused before it wrote anything); should the call itself raise,
        each item is tried again alone. ``schedule``: as :meth:`transact`'s, one pass for the
        whole call (agents' exits: each ran a pass of its own)."""
        done: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        waiting = self._merging.setdefault(handler_many, [])
        waiting.append((item, done))
        if len(waiting) == 1:
            # The first asks for the lock; those who come while it waits ride along.
            self.background(self._merged_round(handler_many, schedule))
        return await done

    async def _merged_round(
        self, handler_many: Callable[[Tx, list[Any]], Sequence[Any]], schedule: bool
    ) -> None:
        async with self.lock:
            # Taken once the lock is held: the items asked for while it was waited for, at most
            # MERGED_MAX; the rest wait their turn behind whoever else waits for the lock (a
            # restarted master's backlog of thousands in one transaction held it for seconds,
            # and scheduling passes and agents' hellos waited a minute behind it).
            waiting = self._merging.pop(handler_many, [])
            batch, rest = waiting[:MERGED_MAX], waiting[MERGED_MAX:]
            if rest:
                self._merging[handler_many] = rest
                self.background(self._merged_round(handler_many, schedule))
            items = [i for i, _ in batch]
            failed = False
            try:
                results, actions = await self._locked(_every, (handler_many, items), schedule)
            except Exception as exc:
                results, actions, failed = [exc] * len(batch), [], True
        await self._perform(actions)
        if failed and len(batch) > 1:
            # The call itself failed: each item alone, so one bad item refuses only itself.
            results = []
            for item in items:
                try:
                    results += await self.transact(_every, handler_many, [item], schedule=schedule)
                except Exception as exc:
                    results.append(exc)
        for (_, done), result in zip(batch, results, strict=True):
            if done.done():
                continue
            if isinstance(result, BaseException):
                done.set_exception(result)
            else:
                done.set_result(result)

    def _know_started(self, actions: list[Action]) -> None:
        """The tokens of the allocations just started, so that a trial's first report is not
        held up reading its token back."""
        for action in actions:
            if isinstance(action, StartAllocation):
                message = action.message
                token = message.env.get(TrialEnv.TOKEN)
                if token:
                    caller = Caller(message.allocation_id, message.trial_id, message.run)
                    self.callers.started(token, caller)

    def _forget_touched(self, holder: dict[str, Tx]) -> None:
        """A transaction failed: its searchers are reloaded from the last committed snapshot."""
        tx = holder.pop("tx", None)
        if tx is not None:
            for exp_id in tx.touched:
                self.searchers.drop(exp_id)

    async def read(self, fn: Callable[[Session], T], *, locked: bool = False) -> T:
        """``fn(session)`` in a transaction of its own; under the lock when it reads the
        in-memory searchers, which transactions change."""
        if not locked:
            return await self.db.run(fn)
        async with self.lock:
            return await self.db.run(fn)

    async def record(self, fn: Callable[[Session], T]) -> T:
        """``fn(session)`` writing outside the lock: for writes that decide nothing (an
        agent's row, shipped log lines, stored metric reports), so they never wait behind a
        scheduling pass. Committed together with the other such writes asked for meanwhile
        (``_group_commit``); answered after the commit."""
        return await self.group_commit.run(fn)

    async def record_merged(
        self, write_many: Callable[[Session, list[I]], Sequence[R]], item: I
    ) -> R:
        """:meth:`record` for writes of one kind: ``write_many(session, items)`` writes every
        item asked for meanwhile together, in a statement or two (``_group_commit``)."""
        return await self.group_commit.merged(write_many, item)

    def submit_merged(
        self, write_many: Callable[[Session, list[I]], Sequence[R]], item: I
    ) -> asyncio.Future[R]:
        """:meth:`record_merged` without a coroutine: the future of ``item``'s result (many
        items handed over at once need no task each)."""
        return self.group_commit.submit(write_many, item)

    async def _perform(self, actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, StartAllocation):
                await self.hub.send(action.agent_id, action.message)
                mark("master-start-sent", action.message.allocation_id)
            elif isinstance(action, KillAllocation):
                await self.hub.send(action.agent_id, Kill(action.allocation_id))
            elif isinstance(action, PreemptAllocation):
                await self.hub.send(action.agent_id, Preempt(action.allocation_id))
            elif isinstance(action, Wake):
                self.waiters.notify(action.key)
            elif isinstance(action, Reschedule):
                self.wakeup.set()
            elif isinstance(action, AllocationEnded):
                self.callers.forget(action.allocation_id)
            elif isinstance(action, ExperimentEnded):
                self.searchers.release(action.experiment_id)
                for hook in self.after_experiment_ended:
                    self.background(hook(action.experiment_id))
                self.waiters.notify(("experiment", action.experiment_id))

    async def wait(self, key: tuple[Any, ...], since: int, timeout: float) -> bool:
        """Wait up to ``timeout`` for ``key`` to move past version ``since``; whether it did.
        Raises :class:`MasterUnreachable` when the master is shutting down."""
        moved = await self.waiters.wait(key, since, timeout)
        if self.waiters.closed:
            raise MasterUnreachable("the master is shutting down; try again shortly")
        return moved

    def background(self, work: Coroutine[Any, Any, Any]) -> None:
        """Run ``work`` on its own; a failure is logged."""
        task = asyncio.create_task(work)
        self._work.add(task)
        task.add_done_callback(self._work.discard)
        task.add_done_callback(_log_failure)

    @property
    def draining(self) -> bool:
        return self.clock() < self.draining_until

    def begin_shutdown(self) -> None:
        """Answer every long-poll now (with 503, so clients retry against the next master)."""
        self.stopping = True
        self.waiters.close()
        self.events.close()


class InlineScheduler(Protocol, Generic[R]):
    """Runs the scheduling pass inside another transaction (see ``transact(schedule=True)``)."""

    def pass_in(self, tx: Tx, agents: list[AgentView]) -> R:
        """The pass, in ``tx`` (on the transaction's worker thread)."""
        ...

    def committed(self, result: R) -> None:
        """The pass's transaction committed: what it decided holds (on the event loop)."""
        ...


def _pass_in(scheduler: InlineScheduler[R], tx: Tx, agents: list[AgentView]) -> R:
    mark("master-pass-begins", "-")
    try:
        result = scheduler.pass_in(tx, agents)
    except Exception as exc:
        raise _PassFailed from exc
    tx.actions.remove(Reschedule())
    return result


class _PassFailed(Exception):
    """The scheduling pass run inside a transaction failed (the cause says how)."""


def _every(
    tx: Tx, handler_many: Callable[[Tx, list[Any]], Sequence[Any]], items: list[Any]
) -> list[Any]:
    results = list(handler_many(tx, items))
    if len(results) != len(items):
        raise AssertionError(f"{handler_many!r} answered {len(results)} of {len(items)} items")
    return results


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("background work failed", exc_info=task.exception())
