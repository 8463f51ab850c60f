"""What the master answers reads with: each read one transaction, returning plain views.

The HTTP layer asks these instead of the database, so it needs neither ``assay.db`` nor
SQLAlchemy. A missing experiment, trial, checkpoint or context raises :class:`NotFound`.
"""

from __future__ import annotations

from collections.abc import Iterable

import assay
from assay.config import MasterConfig
from assay.db import (
    Session,
    agents,
    allocations,
    checkpoints,
    contexts,
    experiments,
    instances,
    logs,
    metrics,
    trials,
)
from assay.master._orchestrator import Orchestrator
from assay.master._views import (
    AgentSummary,
    CheckpointView,
    ExperimentPage,
    ExperimentSummary,
    ExperimentView,
    InstanceView,
    LogLine,
    MasterInfo,
    MetricView,
    PoolView,
    TrialDetail,
    TrialLogs,
    TrialView,
)
from assay.protocol import TrialState


class Reads:
    def __init__(self, core: Orchestrator, settings: MasterConfig) -> None:
        self.core = core
        self.settings = settings

    def info(self) -> MasterInfo:
        return MasterInfo(
            version=assay.__version__,
            cluster_id=self.core.cluster_id,
            started_at=self.core.started_at,
            database="sqlite" if self.core.db.is_sqlite else "postgresql",
        )

    async def experiment(self, experiment_id: int) -> ExperimentView:
        return await self.core.read(
            lambda s: ExperimentView.read(s, experiments.require(s, experiment_id))
        )

    async def experiments(
        self,
        *,
        states: Iterable[str] = (),
        archived: bool = False,
        limit: int = 100,
        offset: int = 0,
    ) -> ExperimentPage:
        """Experiments newest first; ``states`` filters (all when empty); archived ones only
        with ``archived``."""
        wanted = list(states)

        def read(session: Session) -> ExperimentPage:
            rows, total = experiments.page(
                session, states=wanted, include_archived=archived, limit=limit, offset=offset
            )
            counts = trials.counts(session, [e.id for e in rows])
            return ExperimentPage(
                experiments=[ExperimentSummary.of(e, counts[e.id]) for e in rows],
                total=total,
                limit=limit,
                offset=offset,
            )

        return await self.core.read(read)

    async def trials(self, experiment_id: int) -> list[TrialView]:
        def read(session: Session) -> list[TrialView]:
            experiments.require(session, experiment_id)
            return [TrialView.of(t) for t in trials.of_experiment(session, experiment_id)]

        return await self.core.read(read)

    async def trial(self, trial_id: int) -> TrialDetail:
        def read(session: Session) -> TrialDetail:
            trial = trials.require(session, trial_id)
            return TrialDetail.with_runs(trial, list(allocations.of_trial(session, trial_id)))

        return await self.core.read(read)

    async def experiment_checkpoints(self, experiment_id: int) -> list[CheckpointView]:
        def read(session: Session) -> list[CheckpointView]:
            experiments.require(session, experiment_id)
            rows = checkpoints.of(session, experiment_id=experiment_id)
            return [CheckpointView.of(c) for c in rows]

        return await self.core.read(read)

    async def trial_checkpoints(self, trial_id: int) -> list[CheckpointView]:
        def read(session: Session) -> list[CheckpointView]:
            trials.require(session, trial_id)
            return [CheckpointView.of(c) for c in checkpoints.of(session, trial_id=trial_id)]

        return await self.core.read(read)

    async def checkpoint(self, uuid: str) -> CheckpointView:
        return await self.core.read(lambda s: CheckpointView.of(checkpoints.require(s, uuid)))

    async def metrics(
        self, trial_id: int, group: str | None = None, *, include_archived: bool = False
    ) -> list[MetricView]:
        def read(session: Session) -> list[MetricView]:
            trials.require(session, trial_id)
            rows = metrics.series(session, trial_id, group, include_archived=include_archived)
            return [MetricView.of(m) for m in rows]

        return await self.core.read(read)

    async def logs(self, trial_id: int, after: int = 0, limit: int = 1000) -> TrialLogs:
        """Up to ``limit`` of the trial's log lines with an id above ``after``, and whether
        the trial had ended when they were read (to follow logs: wait on ``("logs", trial_id)``
        in ``master.waiters`` while it has not)."""

        def read(session: Session) -> TrialLogs:
            lines = [LogLine.of(e) for e in logs.after(session, trial_id, after, limit)]
            trial = trials.require(session, trial_id)
            return TrialLogs(lines=lines, trial_ended=TrialState(trial.state).terminal)

        return await self.core.read(read)

    async def best_validation(self, experiment_id: int) -> float | None:
        """The best searcher metric any trial of the experiment has reported."""

        def read(session: Session) -> float | None:
            experiments.require(session, experiment_id)
            best = trials.best_of(session, experiment_id)
            return None if best is None else best.best_validation

        return await self.core.read(read)

    async def agents(self) -> list[AgentSummary]:
        hub = self.core.hub

        def read(session: Session) -> list[AgentSummary]:
            used = allocations.used_slots(session)
            return [
                AgentSummary.of(a, connected=hub.is_connected(a.id), used=used.get(a.id, set()))
                for a in agents.registered(session)
            ]

        return await self.core.read(read)

    async def resource_pools(self) -> list[PoolView]:
        views = self.core.hub.connected_views()
        scaled = [p.pool_name for p in self.settings.resource_pools if p.provider is not None]

        def read(session: Session) -> dict[str, list[InstanceView]]:
            return {
                name: [InstanceView.of(row) for row in instances.of_pool(session, name, None)]
                for name in scaled
            }

        by_pool = await self.core.read(read)
        pools = []
        for pool in self.settings.resource_pools:
            members = [a for a in views if a.pool == pool.pool_name]
            pools.append(
                PoolView(
                    name=pool.pool_name,
                    description=pool.description,
                    scheduler=pool.scheduler.type,
                    preemption=pool.scheduler.preemption,
                    agents=len(members),
                    slots=sum(len(a.slots) for a in members),
                    instances=by_pool.get(pool.pool_name, []),
                )
            )
        return pools

    async def context(self, context_id: int) -> bytes:
        """The context archive (tar.gz) agents download."""
        return await self.core.read(lambda s: contexts.require(s, context_id).data)
