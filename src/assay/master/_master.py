"""The master's asynchronous shell: one lock, handlers run as transactions, actions after commit."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

from assay.config import MasterConfig
from assay.db import (
    Allocation,
    Database,
    Session,
    agents,
    allocations,
    checkpoints,
    cluster,
    experiments,
    logs,
    trials,
)
from assay.errors import InvalidRequest, MasterUnreachable, Unauthorized
from assay.master import _gang as gang
from assay.master import _gc as gc
from assay.master import _harness as harness
from assay.master import _jobs as jobs
from assay.master import _lifecycle as life
from assay.master._agents import AgentConnection, AgentHub, Sender
from assay.master._autoscaler import Autoscaler
from assay.master._scheduling import PassResult, schedule_pass
from assay.master._searchers import SearcherCache
from assay.master._submit import Submission, create_experiment, validate_submission
from assay.master._tx import (
    Action,
    ExperimentEnded,
    KillAllocation,
    Reschedule,
    StartAllocation,
    Tx,
    Wake,
)
from assay.master._waiters import Waiters
from assay.protocol import (
    AckExit,
    AgentMessage,
    AllocationState,
    CheckpointReport,
    Exited,
    ExperimentState,
    Heartbeat,
    Hello,
    Kill,
    LogEntry,
    Logs,
    MetricReport,
    OperationAnswer,
    Started,
    UnknownMessage,
    Welcome,
    agent_message,
    metric_reports,
)
from assay.scheduler import JobUpdate

log = logging.getLogger(__name__)

T = TypeVar("T")

IDLE_RELEASE_SECONDS = 5.0
"""How long a trial that asked for its next operation may hold its slots waiting for one."""


class Master:
    """Orchestrates experiments, trials, agents and scheduling over one database.

    Every change runs as a handler in :meth:`transact`: under one lock, in one transaction on a
    worker thread; the actions it records (start a process, wake a long-poll) are performed only
    after the commit.
    """

    def __init__(
        self,
        settings: MasterConfig,
        db: Database,
        assay_home: Path,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.db = db
        self.assay_home = assay_home
        self.clock = clock
        self.lock = asyncio.Lock()
        self.searchers = SearcherCache(assay_home / "searchers")
        self.hub = AgentHub()
        self.waiters = Waiters()
        self.cluster_id = ""
        self.started_at = clock()
        self._wakeup = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False
        self.waiting_jobs: set[str] = set()
        self._work: set[asyncio.Task[Any]] = set()
        self.autoscaler = Autoscaler(self)
        self._preemption_timeouts = {
            p.pool_name: float(p.preemption_timeout) for p in settings.resource_pools
        }

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        self.started_at = self.clock()
        now = self.clock()

        def init(session: Session) -> str:
            agents.disconnect_all(session)
            return cluster.identity(session, now)

        self.cluster_id = await self.db.run(init)
        self._tasks = [
            asyncio.create_task(self._scheduling_loop(), name="scheduler"),
            asyncio.create_task(self._reaper_loop(), name="lost-agent-reaper"),
        ]
        self._wakeup.set()
        await self.autoscaler.resume()
        # Finish checkpoint deletions a previous master marked but did not complete.
        for experiment_id in await self.db.run(checkpoints.experiments_deleting):
            self._background(gc.collect(self, experiment_id))

    @property
    def url(self) -> str:
        """Where agents and trial processes reach this master."""
        host = self.settings.host
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        return f"http://{host}:{self.settings.port}"

    def begin_shutdown(self) -> None:
        """Answer every long-poll now (with 503, so clients retry against the next master)."""
        self._stopping = True
        self.waiters.close()

    async def _wait(self, key: tuple[Any, ...], since: int, timeout: float) -> None:
        await self.waiters.wait(key, since, timeout)
        if self.waiters.closed:
            raise MasterUnreachable("the master is shutting down; try again shortly")

    def _background(self, work: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.create_task(work)
        self._work.add(task)
        task.add_done_callback(self._work.discard)
        task.add_done_callback(_log_failure)

    async def stop(self) -> None:
        self.begin_shutdown()
        await self.autoscaler.close()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    # -- transactions -----------------------------------------------------------------------------

    async def transact(self, handler: Callable[..., T], *args: Any) -> T:
        async with self.lock:
            now = self.clock()
            holder: dict[str, Tx] = {}

            def run(session: Session) -> T:
                tx = Tx(session=session, now=now, searchers=self.searchers)
                holder["tx"] = tx
                return handler(tx, *args)

            try:
                result = await self.db.run(run)
            except BaseException:
                tx = holder.get("tx")
                if tx is not None:
                    for exp_id in tx.touched:
                        self.searchers.drop(exp_id)
                raise
            actions = holder["tx"].actions
        await self._perform(actions)
        return result

    async def _perform(self, actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, StartAllocation):
                await self.hub.send(action.agent_id, action.message)
            elif isinstance(action, KillAllocation):
                await self.hub.send(action.agent_id, Kill(action.allocation_id))
            elif isinstance(action, Wake):
                self.waiters.notify(action.key)
            elif isinstance(action, Reschedule):
                self._wakeup.set()
            elif isinstance(action, ExperimentEnded):
                self.searchers.release(action.experiment_id)
                self._background(gc.collect(self, action.experiment_id))
                self.waiters.notify(("experiment", action.experiment_id))

    # -- scheduling -------------------------------------------------------------------------------

    async def _scheduling_loop(self) -> None:
        while not self._stopping:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), timeout=1.0)
            self._wakeup.clear()
            try:
                await self.schedule_once()
            except Exception:
                log.exception("scheduling pass failed")
                await asyncio.sleep(0.5)

    async def schedule_once(self) -> PassResult:
        agents = self.hub.connected_views()
        result = await self.transact(schedule_pass, agents, self.settings, self.cluster_id)
        self.waiting_jobs = result.waiting_jobs
        return result

    async def _prune_waiters(self) -> None:
        self.waiters.prune()

    async def _reaper_loop(self) -> None:
        ticks = 0
        while not self._stopping:
            await asyncio.sleep(1.0)
            ticks += 1
            steps: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
                ("autoscaling", self.autoscaler.step),
                ("checking for lost agents", self.reap_lost_allocations),
                (
                    "enforcing preemption timeouts",
                    lambda: self.transact(
                        life.enforce_preemption_timeouts, self._preemption_timeouts
                    ),
                ),
            ]
            if ticks % 5 == 0:
                steps.append(("repeating kills", self.resend_kills))
            if ticks % 60 == 0:
                steps.append(("pruning long-poll records", self._prune_waiters))
            for what, step in steps:
                try:
                    await step()
                except Exception:
                    log.exception("%s failed", what)

    async def reap_lost_allocations(self) -> None:
        """Fail the allocations of agents gone longer than ``agent_lost_after_seconds``."""
        now = self.clock()
        limit = self.settings.agent_lost_after_seconds
        for alloc in await self.db.run(allocations.live):
            for agent_id in alloc.slots or {}:
                if self.hub.is_connected(agent_id) or agent_id in (alloc.exits or {}):
                    continue
                since = self.hub.disconnected_since(agent_id) or self.started_at
                if now - since >= limit:
                    # Through the gang, so the allocation's processes on other agents stop too.
                    await self.transact(
                        gang.agent_exited, agent_id, alloc.id, None, f"agent {agent_id} was lost"
                    )

    # -- experiments ------------------------------------------------------------------------------

    async def submit(self, sub: Submission) -> int:
        valid = await asyncio.to_thread(validate_submission, sub, self.settings, self.assay_home)

        def handler(tx: Tx) -> int:
            return create_experiment(tx, valid, self.settings).id

        return await self.transact(handler)

    async def pause(self, experiment_id: int) -> None:
        await self.transact(life.pause_experiment, experiment_id)

    async def activate(self, experiment_id: int) -> None:
        await self.transact(life.activate_experiment, experiment_id)

    async def cancel(self, experiment_id: int) -> None:
        await self.transact(life.cancel_experiment, experiment_id)

    async def kill(self, experiment_id: int) -> None:
        await self.transact(life.kill_experiment, experiment_id)

    async def set_archived(self, experiment_id: int, archived: bool) -> None:
        await self.transact(life.set_archived, experiment_id, archived)

    async def kill_trial(self, trial_id: int) -> None:
        await self.transact(life.kill_trial, trial_id)

    async def list_jobs(self, pool: str | None) -> dict[str, Any]:
        name = pool or self.settings.default_compute_pool
        waiting = set(self.waiting_jobs)
        return await self.db.run(lambda s: jobs.list_jobs(s, name, self.settings, waiting))

    async def update_jobs(self, updates: list[JobUpdate]) -> list[str]:
        return await self.transact(jobs.update_jobs, updates, self.settings)

    async def set_experiment_resource(self, experiment_id: int, field: str, value: Any) -> None:
        await self.transact(
            jobs.update_experiment_resources, experiment_id, field, value, self.settings
        )

    async def wait_experiment(self, experiment_id: int, timeout: float) -> str:
        """Wait up to ``timeout`` seconds for the experiment to end; return its state."""
        key = ("experiment", experiment_id)
        since = self.waiters.version(key)

        def state(session: Session) -> ExperimentState:
            return ExperimentState(experiments.require(session, experiment_id).state)

        current = await self.db.run(state)
        if current.terminal:
            return current
        await self._wait(key, since, timeout)
        return await self.db.run(state)

    # -- trial processes ---------------------------------------------------------------------

    async def caller(self, token: str | None, trial_id: int | None = None) -> harness.Caller:
        return await self.db.run(lambda s: harness.authenticate(s, token, trial_id))

    async def next_operation(self, caller: harness.Caller, timeout: float) -> dict[str, Any]:
        """:meth:`operation` as the JSON the harness gets."""
        return (await self.operation(caller, timeout)).to_dict()

    async def operation(self, caller: harness.Caller, timeout: float) -> OperationAnswer:
        """The trial's next length to train to; ``done`` once the searcher needs no more.

        Waits up to ``timeout`` for the searcher; a trial left waiting past
        ``IDLE_RELEASE_SECONDS`` is released: told it is done for now, so it exits and frees
        its slots, and it is queued again if the searcher later asks for more (ASHA promotion).
        """
        key = ("op", caller.trial_id)
        deadline = self.clock() + min(timeout, IDLE_RELEASE_SECONDS)
        while True:
            since = self.waiters.version(key)
            answer = await self._op_answer(caller)
            if answer is not None:
                return answer
            remaining = deadline - self.clock()
            if remaining <= 0:
                break
            await self._wait(key, since, remaining)
        released = await self.transact(harness.release_if_idle, caller)
        if not released:
            answer = await self._op_answer(caller)
            if answer is not None:
                return answer
        return OperationAnswer(length=None, done=True, released=True)

    async def _op_answer(self, caller: harness.Caller) -> OperationAnswer | None:
        def read(session: Session) -> OperationAnswer | None:
            done = OperationAnswer(length=None, done=True)
            trial = trials.get(session, caller.trial_id)
            exp = experiments.get(session, trial.experiment_id) if trial else None
            if trial is None or exp is None:
                return done
            searcher = self.searchers.searcher(exp)
            pending = searcher.pending_length(trial.request_id)
            if pending is not None:
                return OperationAnswer(length=pending, done=False)
            if searcher.code_driven:
                # Its code decides how long to train; the searcher gives it no lengths.
                return done
            if searcher.is_closed(trial.request_id) or searcher.shutdown is not None:
                return done
            return None

        async with self.lock:
            return await self.db.run(read)

    async def complete_operation(self, caller: harness.Caller, length: int, metric: float) -> None:
        await self.transact(harness.complete_operation, caller, length, metric)

    async def report_metrics(self, caller: harness.Caller, raw: Any) -> None:
        """Store a batch of reports: :class:`MetricReport` objects, or their JSON (a list)."""
        if isinstance(raw, list) and all(isinstance(r, MetricReport) for r in raw):
            reports: list[MetricReport] = raw
        else:
            reports = metric_reports(raw)
        now = self.clock()
        relevant = await self.db.run(lambda s: harness.ingest_metrics(s, caller, reports, now))
        if relevant:
            await self.transact(harness.feed_code_driven, caller, relevant)

    async def report_checkpoint(
        self, caller: harness.Caller, body: CheckpointReport | dict[str, Any]
    ) -> None:
        report = body if isinstance(body, CheckpointReport) else CheckpointReport.from_dict(body)
        await self.transact(harness.report_checkpoint, caller, report)

    async def report_early_exit(self, caller: harness.Caller, reason: str) -> None:
        await self.transact(harness.report_early_exit, caller, reason)

    async def report_progress(self, caller: harness.Caller, progress: float) -> None:
        await self.transact(harness.report_progress, caller, progress)

    async def preemption(self, allocation_id: str, timeout: float) -> bool:
        key = ("preempt", allocation_id)

        def read(session: Session) -> bool:
            alloc = allocations.get(session, allocation_id)
            return (
                alloc is None
                or alloc.preempt is not None
                or alloc.state == AllocationState.TERMINATED
            )

        since = self.waiters.version(key)
        if await self.db.run(read):
            return True
        await self._wait(key, since, timeout)
        return await self.db.run(read)

    # -- agents ------------------------------------------------------------------------------

    def check_agent(self, hello: Hello | dict[str, Any]) -> Hello:
        """Refuse an agent this master cannot take (raises with the reason it is told)."""
        hello = hello if isinstance(hello, Hello) else Hello.from_dict(hello)
        agent_id = hello.agent_id
        expected = self.settings.agent_token
        if expected and not secrets.compare_digest(hello.token or "", expected):
            raise Unauthorized(
                f"agent {agent_id} did not present this cluster's agent token (give it with "
                "--token or ASSAY_AGENT_TOKEN)"
            )
        pool = hello.pool
        pools = [p.pool_name for p in self.settings.resource_pools]
        if pool not in pools:
            raise InvalidRequest(
                f"agent {agent_id} asked to join resource pool {pool!r}, which this master does "
                f"not have; its pools: {', '.join(pools)} (start the agent with --pool NAME)"
            )
        return hello

    async def agent_connected(self, hello: Hello | dict[str, Any], send: Sender) -> AgentConnection:
        hello = self.check_agent(hello)
        agent_id = hello.agent_id
        now = self.clock()

        def upsert(session: Session) -> bool:
            row = agents.connected(
                session,
                agent_id,
                pool=hello.pool,
                labels=hello.labels,
                slots=[s.to_dict() for s in hello.slots],
                address=hello.address,
                version=hello.version,
                now=now,
            )
            return bool(row.enabled)

        enabled = await self.db.run(upsert)
        async with self.lock:
            # What this agent should be running, read before it can be given anything new: an
            # allocation started after this point is not in its hello and must not look lost.
            ours = await self.db.run(lambda s: allocations.on_agent(s, agent_id))
            conn = self.hub.register(hello, send, enabled)
        await send(Welcome(self.cluster_id).to_dict())
        await self._reconcile(conn, hello, ours)
        self._wakeup.set()
        return conn

    async def _reconcile(
        self, conn: AgentConnection, hello: Hello, ours: Sequence[Allocation]
    ) -> None:
        """After a (re)connect, agree with the agent on which allocations are still alive."""
        agent_id = conn.view.id
        running = set(hello.running)
        exited = {e.allocation_id: e for e in hello.exited}
        for alloc in ours:
            if alloc.id in exited or agent_id in (alloc.exits or {}):
                continue
            if alloc.id in running:
                if alloc.state == AllocationState.ASSIGNED:
                    # Its "started" was lost with the old connection.
                    await self.transact(life.allocation_started, alloc.id, agent_id)
                if life.needs_kill(alloc):
                    await conn.send(Kill(alloc.id).to_dict())
            else:
                await self.transact(
                    gang.agent_exited,
                    agent_id,
                    alloc.id,
                    None,
                    f"agent {agent_id} no longer runs it after reconnecting",
                )
        for event in exited.values():
            await self.on_agent_message(agent_id, event)
        known = {a.id for a in ours}
        for alloc_id in sorted(running - known):
            await conn.send(Kill(alloc_id).to_dict())

    async def resend_kills(self) -> None:
        """Kills are messages and can be lost (a dropped connection, a master restart): repeat
        them until the allocation has ended."""
        for alloc in await self.db.run(allocations.live):
            if not life.needs_kill(alloc):
                continue
            for agent_id in alloc.slots or {}:
                if agent_id not in (alloc.exits or {}) and self.hub.is_connected(agent_id):
                    await self.hub.send(agent_id, Kill(alloc.id))

    async def agent_disconnected(self, conn: AgentConnection) -> None:
        now = self.clock()
        if self.hub.disconnect(conn.view.id, conn.generation, now):
            await self.db.run(lambda s: agents.disconnected(s, conn.view.id, now))

    async def on_agent_message(self, agent_id: str, raw: AgentMessage | dict[str, Any]) -> None:
        """Act on a message from a connected agent: an :class:`AgentMessage`, or its JSON."""
        if isinstance(raw, dict):
            try:
                msg = agent_message(raw)
            except UnknownMessage:
                log.warning("agent %s sent an unknown message type %r", agent_id, raw.get("type"))
                return
        else:
            msg = raw
        if isinstance(msg, Started):
            await self.transact(life.allocation_started, msg.allocation_id, agent_id)
        elif isinstance(msg, Exited):
            await self.transact(
                gang.agent_exited, agent_id, msg.allocation_id, msg.exit_code, msg.reason
            )
            await self.hub.send(agent_id, AckExit(msg.allocation_id))
        elif isinstance(msg, Logs):
            await self._ingest_logs(msg.entries)
        elif isinstance(msg, Heartbeat):
            pass
        else:
            log.warning("agent %s sent %r after its hello; ignored", agent_id, msg.type)

    async def _ingest_logs(self, entries: list[LogEntry]) -> None:
        if not entries:
            return
        await self.db.run(lambda s: logs.insert(s, entries))
        for trial_id in {e.trial_id for e in entries}:
            self.waiters.notify(("logs", trial_id))


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("background work failed", exc_info=task.exception())
