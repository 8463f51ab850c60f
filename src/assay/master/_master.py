"""The master: a composition of small collaborators around one shared core.

In the spirit of Determined's ``core.Context``, each job has its own part, and the parts share
an :class:`Orchestrator` (database, lock, searchers, agent hub, long-polls):

- ``master.experiments`` (:class:`ExperimentCommands`): what users do to experiments, trials
  and the queue, each in one transaction that answers with what it changed;
- ``master.reads`` (:class:`Reads`): what users and the web UI read, as plain views;
- ``master.harness`` (:class:`HarnessService`): what trial processes ask for and report;
- ``master.agents`` (:class:`AgentGateway`): the agents' WebSockets;
- ``master.loops`` (:class:`Loops`): scheduling passes and periodic chores;
- ``master.autoscaler`` and checkpoint GC, which see only the narrow interfaces they need.

The methods of :class:`Master` itself are the names the HTTP layer has always called; each
hands over to the part that does the work. New code calls the parts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeVar

from assay.config import MasterConfig
from assay.db import Database, Session, agents, checkpoints, cluster
from assay.master import _gc as gc
from assay.master._agents import AgentConnection, AgentHub, Sender
from assay.master._autoscaler import Autoscaler
from assay.master._commands import ExperimentCommands
from assay.master._gateway import AgentGateway
from assay.master._harness import Caller
from assay.master._harness_service import HarnessService
from assay.master._loops import Loops
from assay.master._orchestrator import Orchestrator
from assay.master._reads import Reads
from assay.master._scheduling import PassResult
from assay.master._searchers import SearcherCache
from assay.master._submit import Submission
from assay.master._views import CheckpointView, ExperimentView, TrialView
from assay.master._waiters import Waiters
from assay.protocol import AgentMessage, CheckpointReport, Hello
from assay.scheduler import JobUpdate

T = TypeVar("T")


class Master:
    """Orchestrates experiments, trials, agents and scheduling over one database."""

    def __init__(
        self,
        settings: MasterConfig,
        db: Database,
        assay_home: Path,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.assay_home = assay_home
        self.core = Orchestrator(db, SearcherCache(assay_home / "searchers"), clock)
        self.agents = AgentGateway(self.core, settings)
        self.harness = HarnessService(self.core)
        self.autoscaler = Autoscaler(
            self.core,
            self.core.hub,
            [p for p in settings.resource_pools if p.provider is not None],
            self.url,
        )
        self.loops = Loops(self.core, settings, self.agents, self.autoscaler)
        self.experiments = ExperimentCommands(
            self.core, settings, assay_home, lambda: self.loops.waiting_jobs
        )
        self.reads = Reads(self.core, settings)

    # -- what the parts share ---------------------------------------------------------------------

    @property
    def db(self) -> Database:
        return self.core.db

    @property
    def clock(self) -> Callable[[], float]:
        return self.core.clock

    @property
    def searchers(self) -> SearcherCache:
        return self.core.searchers

    @property
    def hub(self) -> AgentHub:
        return self.core.hub

    @property
    def waiters(self) -> Waiters:
        return self.core.waiters

    @property
    def cluster_id(self) -> str:
        return self.core.cluster_id

    @cluster_id.setter
    def cluster_id(self, value: str) -> None:
        self.core.cluster_id = value

    @property
    def started_at(self) -> float:
        return self.core.started_at

    @property
    def waiting_jobs(self) -> set[str]:
        return self.loops.waiting_jobs

    @property
    def url(self) -> str:
        """Where agents and trial processes reach this master."""
        host = self.settings.host
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        return f"http://{host}:{self.settings.port}"

    async def transact(self, handler: Callable[..., T], *args: Any) -> T:
        return await self.core.transact(handler, *args)

    # -- start and stop ---------------------------------------------------------------------------

    async def start(self) -> None:
        core = self.core
        core.started_at = core.clock()
        now = core.started_at

        def init(session: Session) -> str:
            agents.disconnect_all(session)
            return cluster.identity(session, now)

        core.cluster_id = await core.read(init)
        self.loops.start()
        await self.autoscaler.resume()
        # Finish checkpoint deletions a previous master marked but did not complete.
        for experiment_id in await core.read(checkpoints.experiments_deleting):
            core.background(gc.collect(core, experiment_id))

    def begin_shutdown(self) -> None:
        """Answer every long-poll now (with 503, so clients retry against the next master)."""
        self.core.begin_shutdown()

    async def stop(self) -> None:
        self.begin_shutdown()
        await self.autoscaler.close()
        await self.loops.stop()

    # -- the names the HTTP layer calls -----------------------------------------------------------

    async def schedule_once(self) -> PassResult:
        return await self.loops.schedule_once()

    async def submit(self, sub: Submission) -> int:
        return (await self.experiments.create(sub)).id

    async def create_experiment(self, sub: Submission) -> ExperimentView:
        return await self.experiments.create(sub)

    async def pause(self, experiment_id: int) -> ExperimentView:
        return await self.experiments.pause(experiment_id)

    async def activate(self, experiment_id: int) -> ExperimentView:
        return await self.experiments.activate(experiment_id)

    async def cancel(self, experiment_id: int) -> ExperimentView:
        return await self.experiments.cancel(experiment_id)

    async def kill(self, experiment_id: int) -> ExperimentView:
        return await self.experiments.kill(experiment_id)

    async def set_archived(self, experiment_id: int, archived: bool) -> ExperimentView:
        return await self.experiments.set_archived(experiment_id, archived)

    async def kill_trial(self, trial_id: int) -> TrialView:
        return await self.experiments.kill_trial(trial_id)

    async def list_jobs(self, pool: str | None) -> dict[str, Any]:
        return asdict(await self.experiments.queue(pool))

    async def update_jobs(self, updates: list[JobUpdate]) -> list[str]:
        return await self.experiments.update_jobs(updates)

    async def set_experiment_resource(
        self, experiment_id: int, field: str, value: Any
    ) -> ExperimentView:
        return await self.experiments.set_resources(experiment_id, {field: value})

    async def set_experiment_resources(
        self, experiment_id: int, changes: Mapping[str, Any]
    ) -> ExperimentView:
        return await self.experiments.set_resources(experiment_id, changes)

    async def wait_experiment(self, experiment_id: int, timeout: float) -> str:
        return await self.experiments.wait(experiment_id, timeout)

    async def caller(self, token: str | None, trial_id: int | None = None) -> Caller:
        return await self.harness.caller(token, trial_id)

    async def next_operation(self, caller: Caller, timeout: float) -> dict[str, Any]:
        return (await self.harness.operation(caller, timeout)).to_dict()

    async def complete_operation(self, caller: Caller, length: int, metric: float) -> None:
        await self.harness.complete_operation(caller, length, metric)

    async def report_metrics(self, caller: Caller, raw: Any) -> None:
        await self.harness.report_metrics(caller, raw)

    async def report_checkpoint(
        self, caller: Caller, body: CheckpointReport | dict[str, Any]
    ) -> CheckpointView:
        return await self.harness.report_checkpoint(caller, body)

    async def report_early_exit(self, caller: Caller, reason: str) -> None:
        await self.harness.report_early_exit(caller, reason)

    async def report_progress(self, caller: Caller, progress: float) -> None:
        await self.harness.report_progress(caller, progress)

    async def preemption(self, allocation_id: str, timeout: float) -> bool:
        return await self.harness.preemption(allocation_id, timeout)

    def check_agent(self, hello: Hello | dict[str, Any]) -> Hello:
        return self.agents.check(hello)

    async def agent_connected(self, hello: Hello | dict[str, Any], send: Sender) -> AgentConnection:
        return await self.agents.connected(hello, send)

    async def agent_disconnected(self, conn: AgentConnection) -> None:
        await self.agents.disconnected(conn)

    async def on_agent_message(self, agent_id: str, raw: AgentMessage | dict[str, Any]) -> None:
        await self.agents.on_message(agent_id, raw)

    async def resend_kills(self) -> None:
        await self.agents.resend_kills()

    async def reap_lost_allocations(self) -> None:
        await self.agents.reap_lost()
