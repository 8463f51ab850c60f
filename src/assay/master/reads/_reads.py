"""What the master answers reads with: each read is one transaction and answers with the REST
resource (:mod:`assay.rest`) the API sends.

The HTTP layer asks these instead of the database, so it needs neither ``assay.db`` nor
SQLAlchemy. A missing experiment, trial, checkpoint or context raises :class:`NotFound`.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable

from pydantic import TypeAdapter

import assay
from assay import rest
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
    notes,
    trials,
)
from assay.errors import Forbidden, NotFound
from assay.master.identity import Actor
from assay.master.kernel import (
    KEEP_ALIVE_SECONDS,
    Caller,
    LogBatch,
    Message,
    Orchestrator,
    Scope,
    follow_logs,
    views,
)
from assay.master.queue import room
from assay.master.reads._curves import pick, series_of
from assay.master.reads._live import LiveAllocation, live_allocations
from assay.master.reads._pages import (
    ExperimentsAsk,
    Memory,
    TrialsAsk,
    experiment_page,
    experiments_page,
    queue_page,
    trial_page,
    trials_page,
)
from assay.master.reads._pool import ReadPool
from assay.master.reads._state import cluster_state
from assay.protocol import TrialState

LOG_PAGE = 1000
"""The most log lines one read returns."""

"""How long a follower of a trial's logs waits for a line before it is sent an empty batch."""

assert set(rest.MetricList.model_fields) == {"metrics"}, "metrics_json writes MetricList by hand"


@functools.cache
def _metrics_json() -> TypeAdapter[list[rest.Metric]]:
    """What turns a part of a trial's reports into JSON (never all of them as models at once).
    Built at the first read, as the resources' own schemas are: it takes tens of milliseconds,
    which every process importing the master would pay at start-up."""
    return TypeAdapter(list[rest.Metric])


class Reads:
    def __init__(
        self,
        core: Orchestrator,
        settings: MasterConfig,
        pages: ReadPool,
        reserved: Callable[[], set[str]] = set,
    ) -> None:
        self.core = core
        self.settings = settings
        self.pages = pages
        self._reserved = reserved
        """The jobs the scheduler holds slots for (SCHEDULED in the queue)."""
        self._rooms: tuple[int, tuple[tuple[str, room.AgentRoom, int], ...]] = (-1, ())
        self._commit = assay.built_from()
        """What this master was built from: read once (in a checkout, it asks git)."""

    def memory(self) -> Memory:
        """What a page needs of the master's memory, taken now. What the agents offer is
        counted again only when they changed (a few milliseconds at a thousand agents, which
        every read would pay on the event loop)."""
        hub = self.core.hub
        if self._rooms[0] != hub.changes:
            self._rooms = (hub.changes, Memory.rooms_of(hub.connected_views()))
        return Memory(self.core.clock(), frozenset(self._reserved()), self._rooms[1])

    def info(self) -> rest.MasterInfo:
        return rest.MasterInfo(
            version=assay.__version__,
            commit=self._commit,
            cluster_id=self.core.cluster_id,
            started_at=self.core.started_at,
            database="sqlite" if self.core.db.is_sqlite else "postgresql",
            max_grid_points=self.settings.limits.max_grid_points,
        )

    async def experiment(self, experiment_id: int) -> rest.Experiment:
        return await self.pages.run(experiment_page, self.memory(), experiment_id)

    async def experiment_json(self, experiment_id: int) -> bytes:
        return await self.pages.json(experiment_page, self.memory(), experiment_id)

    async def experiments(self, ask: ExperimentsAsk = ExperimentsAsk()) -> rest.ExperimentList:
        """A page of experiments (:class:`ExperimentsAsk`), newest first unless it says
        otherwise."""
        # A list says no experiment's wait: of the master's memory it needs only the clock.
        return await self.pages.run(experiments_page, Memory(self.core.clock()), ask)

    async def experiments_json(self, ask: ExperimentsAsk) -> bytes:
        return await self.pages.json(experiments_page, Memory(self.core.clock()), ask)

    async def trials(self, ask: TrialsAsk) -> rest.TrialList:
        """An experiment's trials (:class:`TrialsAsk`)."""
        return await self.pages.run(trials_page, self.memory(), ask)

    async def trials_json(self, ask: TrialsAsk) -> bytes:
        return await self.pages.json(trials_page, self.memory(), ask)

    async def trial(self, trial_id: int) -> rest.TrialDetail:
        return await self.pages.run(trial_page, self.memory(), trial_id)

    async def trial_json(self, trial_id: int) -> bytes:
        return await self.pages.json(trial_page, self.memory(), trial_id)

    async def queue(self, pool: str | None) -> rest.JobQueue:
        """The active jobs of ``pool`` (the default compute pool when None), in scheduling
        order."""
        return await self.pages.run(queue_page, self.memory(), pool)

    async def queue_json(self, pool: str | None) -> bytes:
        return await self.pages.json(queue_page, self.memory(), pool)

    async def notes(
        self, experiment_id: int, *, after: int = 0, limit: int = 1000
    ) -> rest.ExperimentNoteList:
        """The experiment's notes after note ``after``, oldest first."""

        def read(session: Session) -> rest.ExperimentNoteList:
            experiments.require(session, experiment_id)
            rows = notes.of_experiment(session, experiment_id, after=after, limit=limit)
            return rest.ExperimentNoteList(
                notes=[rest.ExperimentNote(id=n.id, time=n.time, text=n.text) for n in rows]
            )

        return await self.core.read(read)

    async def experiment_checkpoints(self, experiment_id: int) -> rest.CheckpointList:
        def read(session: Session) -> rest.CheckpointList:
            experiments.require(session, experiment_id)
            rows = checkpoints.of(session, experiment_id=experiment_id)
            return rest.CheckpointList(checkpoints=views.checkpoints_held(session, rows))

        return await self.core.read(read)

    async def trial_checkpoints(self, trial_id: int) -> rest.CheckpointList:
        def read(session: Session) -> rest.CheckpointList:
            trials.require(session, trial_id)
            rows = checkpoints.of(session, trial_id=trial_id)
            return rest.CheckpointList(checkpoints=views.checkpoints_held(session, rows))

        return await self.core.read(read)

    async def checkpoint(self, uuid: str) -> rest.Checkpoint:
        def read(session: Session) -> rest.Checkpoint:
            (shown,) = views.checkpoints_held(session, [checkpoints.require(session, uuid)])
            return shown

        return await self.core.read(read)

    async def metrics_json(
        self, trial_id: int, group: str | None = None, *, include_archived: bool = False
    ) -> bytes:
        """The trial's reports, a :class:`rest.MetricList` as JSON. A trial can hold millions
        of reports: they are read and turned into JSON a part at a time, so the master holds
        the answer's text, never a model per report (about 2.5 KiB each, read all at once)."""

        def read(session: Session) -> bytes:
            trials.require(session, trial_id)
            body = bytearray(b'{"metrics":[')
            parts = metrics.series_in_parts(
                session, trial_id, group, include_archived=include_archived
            )
            for index, rows in enumerate(parts):
                if index:
                    body += b","
                shown = [views.metric(m) for m in rows]
                body += _metrics_json().dump_json(shown, by_alias=True)[1:-1]
            body += b"]}"
            return bytes(body)

        return await self.core.read(read)

    async def curves(
        self,
        experiment_id: int,
        trial_ids: list[int],
        *,
        group: str | None = None,
        metric: str | None = None,
        max_points: int = 1000,
        times: bool = False,
    ) -> rest.MetricSeriesList:
        """One metric of ``trial_ids`` (trials of the experiment) by step, in one read: by
        default the searcher's metric of the validation group; with ``times``, when each point
        was reported too."""

        def read(session: Session) -> rest.MetricSeriesList:
            exp = experiments.require(session, experiment_id)
            missing = sorted(set(trial_ids) - trials.ids_in_experiment(session, exp.id, trial_ids))
            if missing:
                shown = ", ".join(map(str, missing[:10])) + (", ..." if len(missing) > 10 else "")
                raise NotFound(f"experiment {experiment_id} has no trial {shown}")
            default = f"validation/{(exp.config.get('searcher') or {}).get('metric', '')}"
            reported = metrics.names(session, trial_ids)
            shown_group, shown_metric = pick(reported, group, metric, default)
            rows = metrics.curves(session, trial_ids, shown_group)
            return series_of(
                rows, reported, trial_ids, shown_group, shown_metric, max_points, times=times
            )

        return await self.core.read(read)

    async def logs(self, trial_id: int, after: int = 0, limit: int = LOG_PAGE) -> rest.LogPage:
        """Up to ``limit`` of the trial's log lines with an id above ``after``, oldest first."""
        batch = await self._logs(trial_id, after, limit)
        return rest.LogPage(logs=batch.entries)

    def event_position(self) -> str:
        """The id of the last live-change batch published (see :meth:`follow_events`): a read
        made after taking it, and a stream resumed after it, together miss nothing."""
        return self.core.events.position

    async def follow_events(
        self,
        *,
        experiment_id: int | None = None,
        trial_id: int | None = None,
        queue: bool = False,
        cluster: bool = False,
        last_event_id: str | None = None,
    ) -> AsyncIterator[Message | None]:
        """Live changes for a viewer (see :class:`Scope`): of every experiment, of one
        experiment with its trials and metrics, or of one trial; with ``queue`` and
        ``cluster``, whether those changed too. Raises :class:`NotFound` at once when the
        experiment or trial does not exist."""

        def read(session: Session) -> Scope:
            if trial_id is not None:
                trial = trials.require(session, trial_id)
                if experiment_id is not None and trial.experiment_id != experiment_id:
                    raise NotFound(
                        f"trial {trial_id} is not of experiment {experiment_id} "
                        f"(it is of experiment {trial.experiment_id})"
                    )
                return Scope(trial.experiment_id, trial_id, queue, cluster)
            if experiment_id is not None:
                experiments.require(session, experiment_id)
            return Scope(experiment_id, None, queue, cluster)

        scope = await self.core.read(read)
        return self.core.events.follow(scope, last_event_id, KEEP_ALIVE_SECONDS)

    async def follow_logs(
        self, trial_id: int, after: int = 0
    ) -> AsyncIterator[LogBatch[rest.LogEntry]]:
        """The trial's log lines with an id above ``after`` as they come (:func:`follow_logs`;
        ``ended``: the trial has ended). Raises :class:`NotFound` at once when the trial does
        not exist."""
        return await follow_logs(
            self.core.waiters,
            ("logs", trial_id),
            lambda last: self._logs(trial_id, last, LOG_PAGE),
            after,
        )

    async def _logs(self, trial_id: int, after: int, limit: int) -> LogBatch[rest.LogEntry]:
        def read(session: Session) -> LogBatch[rest.LogEntry]:
            entries = [views.log_entry(e) for e in logs.after(session, trial_id, after, limit)]
            trial = trials.require(session, trial_id)
            return LogBatch(entries, ended=TrialState(trial.state).terminal)

        return await self.core.read(read)

    async def best_validation(
        self, reader: Actor | Caller, experiment_id: int
    ) -> rest.BestValidation:
        """The best searcher metric any trial of the experiment has reported. A trial's token
        reads its own experiment's only (:class:`Forbidden` otherwise)."""

        def read(session: Session) -> rest.BestValidation:
            experiments.require(session, experiment_id)
            if isinstance(reader, Caller):
                own = trials.require(session, reader.trial_id).experiment_id
                if own != experiment_id:
                    raise Forbidden(
                        f"trial {reader.trial_id}'s token reads only its own experiment "
                        f"({own}), not experiment {experiment_id}"
                    )
            best = trials.best_of(session, experiment_id)
            return rest.BestValidation(
                best_validation=None if best is None else best.best_validation
            )

        return await self.core.read(read)

    async def live_allocations(self) -> list[LiveAllocation]:
        """Every allocation starting or running, with the slots it holds on each agent."""
        return await self.core.read(live_allocations)

    async def agents(self) -> rest.AgentList:
        hub = self.core.hub

        def read(session: Session) -> rest.AgentList:
            used = allocations.used_slots(session)
            return rest.AgentList(
                agents=[
                    views.agent(
                        a,
                        connected=hub.is_connected(a.id),
                        used=used.get(a.id, set()),
                        last_heard=hub.last_heard(a.id),
                    )
                    for a in agents.registered(session)
                ]
            )

        return await self.core.read(read)

    async def metrics(self) -> bytes:
        """Every Prometheus metric of this master, in the text format (``GET /metrics``)."""
        listing = await self.agents()
        names = [p.pool_name for p in self.settings.resource_pools]
        memory = self.memory()

        def read(session: Session) -> list[rest.JobQueue]:
            return [queue_page(session, self.settings, memory, n) for n in names]

        queues = await self.core.read(read)
        connections = self.core.db.connections()
        state = cluster_state(names, listing, queues, connections, self.core.clock())
        return self.core.measures.exposition(state)

    async def resource_pools(self) -> rest.ResourcePoolList:
        connected = self.core.hub.connected_views()
        scaled = [p.pool_name for p in self.settings.resource_pools if p.provider is not None]

        def read(session: Session) -> dict[str, list[rest.Instance]]:
            return {
                name: [views.instance(row) for row in instances.of_pool(session, name, None)]
                for name in scaled
            }

        by_pool = await self.core.read(read)
        pools = []
        for pool in self.settings.resource_pools:
            members = [a for a in connected if a.pool == pool.pool_name]
            pools.append(
                rest.ResourcePool(
                    name=pool.pool_name,
                    description=pool.description,
                    scheduler=pool.scheduler.type,
                    preemption=pool.scheduler.preemption,
                    agents=len(members),
                    slots=sum(len(a.slots) for a in members),
                    instances=by_pool.get(pool.pool_name, []),
                )
            )
        return rest.ResourcePoolList(resource_pools=pools)

    async def context(self, context_id: int) -> bytes:
        """The context archive (tar.gz) agents download."""
        return await self.core.read(lambda s: contexts.require(s, context_id).data)

    async def experiment_context(self, experiment_id: int) -> bytes:
        """The context archive (tar.gz) the experiment's trials run in."""

        def read(session: Session) -> bytes:
            exp = experiments.require(session, experiment_id)
            return contexts.require(session, exp.context_id).data

        return await self.core.read(read)
