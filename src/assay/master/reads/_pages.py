"""The pages the API is asked for most (experiments, trials, the job queue): each a function of
a session, the master's settings and what it needs of the master's memory, taken when it was
asked for (:class:`Memory`). Nothing here reaches the master's objects, so a page can be read
in a process of its own (:mod:`assay.master.reads._pool`) as well as on the master's threads.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from assay import rest
from assay.config import MasterConfig
from assay.db import Experiment, Session, allocations, experiments, trials
from assay.master.kernel import AgentView, views
from assay.master.queue import jobs, room
from assay.protocol import TrialState


@dataclass(frozen=True)
class Memory:
    """What a page needs of the master's memory: the clock, the jobs the scheduler holds slots
    for, and what the connected, enabled agents of each pool offer. Agents alike are counted
    once, so it stays small to send at a thousand agents."""

    now: float
    reserved: frozenset[str] = frozenset()
    rooms: tuple[tuple[str, room.AgentRoom, int], ...] = ()
    """(pool, what an agent offers, how many agents offer it)."""

    @staticmethod
    def rooms_of(connected: Iterable[AgentView]) -> tuple[tuple[str, room.AgentRoom, int], ...]:
        """:attr:`rooms` of the connected agents."""
        counted = Counter((a.pool, jobs.agent_room(a)) for a in connected if a.enabled)
        return tuple((pool, offer, n) for (pool, offer), n in counted.items())

    def agents(self, pool: str) -> list[room.AgentRoom]:
        """What each connected, enabled agent of ``pool`` offers (one entry per agent)."""
        return [offer for p, offer, n in self.rooms if p == pool for _ in range(n)]


@dataclass(frozen=True)
class ExperimentsAsk:
    """A page of experiments: ``states`` filters (all when empty), ``owner``, ``name`` (a
    substring) and ``label`` too when given; archived ones only with ``archived``. Determined's
    list filters too (``owners``, ``labels``, ``only_archived``, ``description``: see
    :func:`assay.db.experiments.page`); each experiment shown in ``full``, config included."""

    states: tuple[str, ...] = ()
    archived: bool = False
    owner: str | None = None
    name: str | None = None
    label: str | None = None
    sort: rest.ExperimentSort = rest.ExperimentSort.ID
    order: rest.SortOrder = rest.SortOrder.DESC
    limit: int = 100
    offset: int = 0
    owners: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    only_archived: bool = False
    description: str | None = None
    full: bool = False


@dataclass(frozen=True)
class TrialsAsk:
    """An experiment's trials (of ``states`` when given), by id unless ``sort`` and ``order``
    say otherwise; a page of them when ``limit`` is given."""

    experiment_id: int
    states: tuple[str, ...] = field(default=())
    sort: rest.TrialSort = rest.TrialSort.ID
    order: rest.SortOrder = rest.SortOrder.ASC
    limit: int | None = None
    offset: int = 0


def _waiting(
    session: Session, settings: MasterConfig, memory: Memory, exp: Experiment
) -> str | None:
    """Why the experiment's queued trials wait, as the job queue says it (none queued: None)."""
    if not trials.counts(session, [exp.id])[exp.id].get(TrialState.QUEUED):
        return None
    return jobs.waiting_of(session, exp.job_id, settings, set(memory.reserved), memory.agents)


def experiments_page(
    session: Session, settings: MasterConfig, memory: Memory, ask: ExperimentsAsk
) -> rest.ExperimentList:
    rows, total = experiments.page(
        session,
        states=list(ask.states),
        include_archived=ask.archived,
        owner=ask.owner,
        name=ask.name,
        label=ask.label,
        sort=ask.sort.value,
        descending=ask.order == rest.SortOrder.DESC,
        limit=ask.limit,
        offset=ask.offset,
        now=memory.now,
        owners=ask.owners,
        labels=ask.labels,
        only_archived=ask.only_archived,
        description=ask.description,
    )
    ids = [e.id for e in rows]
    counts = trials.counts(session, ids)
    best = trials.best_of_each(session, ids)
    show = views.experiment_in_full if ask.full else views.experiment_summary
    return rest.ExperimentList(
        experiments=[show(e, counts[e.id], best.get(e.id)) for e in rows],
        pagination=rest.Pagination(total=total, limit=ask.limit, offset=ask.offset),
    )


def experiment_page(
    session: Session, settings: MasterConfig, memory: Memory, experiment_id: int
) -> rest.Experiment:
    exp = experiments.require(session, experiment_id)
    shown = views.experiment(session, exp)
    return shown.model_copy(update={"waiting": _waiting(session, settings, memory, exp)})


def trials_page(
    session: Session, settings: MasterConfig, memory: Memory, ask: TrialsAsk
) -> rest.TrialList:
    exp = experiments.require(session, ask.experiment_id)
    rows, total = trials.page_of(
        session,
        ask.experiment_id,
        states=list(ask.states),
        sort=ask.sort.value,
        descending=ask.order == rest.SortOrder.DESC,
        limit=ask.limit,
        offset=ask.offset,
    )
    return rest.TrialList(
        trials=views.trials_of(session, rows, _waiting(session, settings, memory, exp)),
        pagination=rest.Pagination(
            total=total, limit=total if ask.limit is None else ask.limit, offset=ask.offset
        ),
    )


def trial_page(
    session: Session, settings: MasterConfig, memory: Memory, trial_id: int
) -> rest.TrialDetail:
    row = trials.require(session, trial_id)
    waiting = None
    if row.state == TrialState.QUEUED:
        exp = experiments.require(session, row.experiment_id)
        waiting = _waiting(session, settings, memory, exp)
    return views.trial_detail(session, row, allocations.of_trial(session, trial_id), waiting)


def queue_page(
    session: Session, settings: MasterConfig, memory: Memory, pool: str | None
) -> rest.JobQueue:
    """The active jobs of ``pool`` (the default compute pool when None), in scheduling order."""
    name = pool or settings.default_compute_pool
    return jobs.list_jobs(session, name, settings, set(memory.reserved), memory.agents(name))
