"""Allocations: one row per run of a trial on concrete slots (a restart is a new one)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import NamedTuple

from sqlalchemy import String, bindparam, case, cast, func, select
from sqlalchemy.orm import Session

from assay.db._models import Allocation, Experiment, Job, TaskInstance, Trial
from assay.protocol import LIVE_ALLOCATION_STATES, AllocationState, PreemptReason


def get(session: Session, allocation_id: str) -> Allocation | None:
    return session.get(Allocation, allocation_id)


class Brief(NamedTuple):
    state: str
    trial_id: int
    preempt: str | None


# Built once: what every metric report, log batch and preemption poll asks, hundreds of times a
# second on a large cluster, where building a statement costs more than running it.
_BRIEF = select(Allocation.state, Allocation.trial_id, Allocation.preempt).where(
    Allocation.id == bindparam("allocation_id")
)
_BRIEFS = select(Allocation.id, Allocation.state, Allocation.trial_id, Allocation.preempt).where(
    Allocation.id.in_(bindparam("ids", expanding=True))
)


def by_ids(session: Session, allocation_ids: Sequence[str]) -> dict[str, Allocation]:
    """The allocations of ``allocation_ids`` that exist, by id, in one query."""
    wanted = sorted(set(allocation_ids))
    if not wanted:
        return {}
    return {a.id: a for a in session.scalars(select(Allocation).where(Allocation.id.in_(wanted)))}


def brief(session: Session, allocation_id: str) -> Brief | None:
    """An allocation's state, trial and preemption reason, read without loading its row (and
    decoding its JSON columns)."""
    row = session.execute(_BRIEF, {"allocation_id": allocation_id}).first()
    return None if row is None else Brief(row[0], row[1], row[2])


def create(
    session: Session,
    *,
    allocation_id: str,
    trial_id: int,
    run: int,
    pool: str,
    slots: dict[str, list[str]],
    state: AllocationState,
    token: str,
    created_at: float,
) -> Allocation:
    """A new allocation of ``slots`` (``{agent_id: [slot ids]}``), nothing asked of it yet."""
    alloc = Allocation(
        id=allocation_id,
        trial_id=trial_id,
        run=run,
        pool=pool,
        slots=slots,
        slot_count=sum(len(ids) for ids in slots.values()),
        state=state,
        token=token,
        preempt=None,
        kill_requested=False,
        released=False,
        exits={},
        overdue=False,
        exit_reason="",
        created_at=created_at,
    )
    session.add(alloc)
    return alloc


class Holder(NamedTuple):
    """Whose a token is: an allocation, its trial and run, and its state."""

    id: str
    trial_id: int
    run: int
    state: str


def by_token(session: Session, token: str) -> Holder | None:
    """The allocation holding ``token``, read as a plain row."""
    return by_tokens(session, [token]).get(token)


_BY_TOKENS = select(
    Allocation.token, Allocation.id, Allocation.trial_id, Allocation.run, Allocation.state
).where(Allocation.token.in_(bindparam("tokens", expanding=True)))


def by_tokens(session: Session, tokens: Sequence[str]) -> dict[str, Holder]:
    """The allocation holding each of ``tokens`` that one holds, read at once (an agent's
    relayed batches from many trials; every trial of a master restarted under load)."""
    if not tokens:
        return {}
    rows = session.execute(_BY_TOKENS, {"tokens": list(tokens)})
    return {
        token: Holder(allocation_id, trial_id, run, state)
        for token, allocation_id, trial_id, run, state in rows
    }


# Statements the scheduling pass and the master's loops run all the time, built once: building
# one (and its cache key) costs more than SQLite takes to run it.
_LIVE = select(Allocation).where(Allocation.state.in_(LIVE_ALLOCATION_STATES))
_LIVE_WITH_JOBS = (
    select(Allocation, Trial, Job)
    .join(Trial, Allocation.trial_id == Trial.id)
    .join(Experiment, Trial.experiment_id == Experiment.id)
    .join(Job, Experiment.job_id == Job.id)
    .where(Allocation.state.in_(LIVE_ALLOCATION_STATES))
)


def live(session: Session) -> Sequence[Allocation]:
    """Allocations starting or running."""
    return session.scalars(_LIVE).all()


class LiveBrief(NamedTuple):
    id: str
    state: str
    slots: dict[str, list[str]]
    exits: dict[str, int | None]
    kill_requested: bool
    overdue: bool
    preempt: str | None


_LIVE_BRIEF = select(
    Allocation.id,
    Allocation.state,
    Allocation.slots,
    Allocation.exits,
    Allocation.kill_requested,
    Allocation.overdue,
    Allocation.preempt,
).where(Allocation.state.in_(LIVE_ALLOCATION_STATES))


def live_briefly(session: Session) -> list[LiveBrief]:
    """What the master's loops ask of every live allocation (its agents, whether a kill is
    due), read as plain rows: the loops ask every few seconds, and loading eight thousand
    allocations as objects cost a large cluster's master a tenth of its core."""
    return [
        LiveBrief(a, s, slots or {}, exits or {}, bool(k), bool(o), p)
        for a, s, slots, exits, k, o, p in session.execute(_LIVE_BRIEF)
    ]


def briefs(session: Session, allocation_ids: Sequence[str]) -> dict[str, Brief]:
    """:func:`brief` of each of ``allocation_ids`` that exists, read at once (a batch of
    reports or log lines from many trials)."""
    if not allocation_ids:
        return {}
    rows = session.execute(_BRIEFS, {"ids": list(allocation_ids)})
    return {
        allocation_id: Brief(state, trial, preempt) for allocation_id, state, trial, preempt in rows
    }


def live_of_trial(session: Session, trial_id: int) -> Allocation | None:
    """The trial's allocation starting or running, if any."""
    return session.scalars(
        select(Allocation)
        .where(Allocation.trial_id == trial_id, Allocation.state.in_(LIVE_ALLOCATION_STATES))
        .order_by(Allocation.created_at.desc())
    ).first()


def of_trial(session: Session, trial_id: int) -> Sequence[Allocation]:
    """Every run of the trial, first to last."""
    return session.scalars(
        select(Allocation).where(Allocation.trial_id == trial_id).order_by(Allocation.run)
    ).all()


def on_agent(session: Session, agent_id: str) -> list[Allocation]:
    """Live allocations holding slots on ``agent_id``.

    Every agent that connects asks, so the database narrows the rows by the agent's id in
    the slots' JSON text (its key, as ``json.dumps`` writes it) before any is loaded: a
    thousand agents reconnecting to a master with eight thousand live allocations would
    otherwise load every one of them a thousand times."""
    key = json.dumps(agent_id)
    held_text = cast(Allocation.slots, String).contains(key, autoescape=True)
    rows = session.scalars(_LIVE.where(held_text)).all()
    return [a for a in rows if agent_id in (a.slots or {})]


def preempting(session: Session) -> list[tuple[Allocation, Trial, Experiment]]:
    """Live allocations asked to give their slots back and not yet killed, with their trial
    and experiment."""
    rows = session.execute(
        select(Allocation, Trial, Experiment)
        .join(Trial, Allocation.trial_id == Trial.id)
        .join(Experiment, Trial.experiment_id == Experiment.id)
        .where(
            Allocation.state.in_(LIVE_ALLOCATION_STATES),
            Allocation.preempt.is_not(None),
            Allocation.kill_requested.is_(False),
            Allocation.overdue.is_(False),
        )
    ).all()
    return [(a, t, e) for a, t, e in rows]


def live_with_jobs(session: Session) -> list[tuple[Allocation, Trial, Job]]:
    """Live allocations with their trial and their experiment's job."""
    rows = session.execute(_LIVE_WITH_JOBS).all()
    return [(a, t, j) for a, t, j in rows]


def used_slots(session: Session) -> dict[str, set[str]]:
    """Slot ids held by live allocations, per agent: trials' and tasks' instances' (a
    notebook's, a job's); every agent running one is a key, even for zero-slot work."""
    used: dict[str, set[str]] = {}
    for alloc in live(session):
        for agent_id, slots in (alloc.slots or {}).items():
            used.setdefault(agent_id, set()).update(str(s) for s in slots)
    held = select(TaskInstance.agent_id, TaskInstance.slots).where(
        TaskInstance.live.is_(True), TaskInstance.agent_id.is_not(None)
    )
    for agent_id, slots in session.execute(held):
        used.setdefault(agent_id, set()).update(str(s) for s in slots or ())
    return used


def live_of_experiments(
    session: Session, experiment_ids: Sequence[int]
) -> list[tuple[Allocation, Trial]]:
    """Live allocations of these experiments' trials not yet told to die, with their trial."""
    rows = session.execute(
        select(Allocation, Trial)
        .join(Trial, Allocation.trial_id == Trial.id)
        .where(
            Trial.experiment_id.in_(experiment_ids),
            Allocation.state.in_(LIVE_ALLOCATION_STATES),
            Allocation.kill_requested.is_(False),
        )
    ).all()
    return [(a, t) for a, t in rows]


def mark_started(session: Session, alloc: Allocation, *, at: float) -> None:
    """The allocation's processes started running at ``at``."""
    alloc.state = AllocationState.RUNNING
    alloc.started_at = at


def end(
    session: Session, alloc: Allocation, *, exit_code: int | None, reason: str, at: float
) -> None:
    """The allocation ended at ``at`` with ``exit_code`` (None: lost) for ``reason``."""
    alloc.state = AllocationState.TERMINATED
    alloc.exit_code = exit_code
    alloc.exit_reason = reason
    alloc.ended_at = at


def request_preemption(
    session: Session, alloc: Allocation, *, reason: PreemptReason, at: float
) -> None:
    """Ask the allocation to checkpoint and exit for ``reason``; its timeout runs from the first."""
    if not alloc.preempt:
        alloc.preempt_at = at
    alloc.preempt = reason


def request_kill(session: Session, alloc: Allocation) -> None:
    """A user asked for the allocation's processes to be killed (its trial ends CANCELED)."""
    alloc.kill_requested = True


def mark_overdue(session: Session, alloc: Allocation) -> None:
    """The allocation outlived its preemption timeout and is killed."""
    alloc.overdue = True


def mark_timed_out(session: Session, alloc: Allocation) -> None:
    """The allocation's trial ran longer than ``max_trial_duration``; it is killed."""
    alloc.timed_out = True


def mark_lost(session: Session, alloc: Allocation) -> None:
    """The allocation's processes were lost with an agent before any failed: the cluster's loss."""
    alloc.lost = True


def mark_released(session: Session, alloc: Allocation) -> None:
    """The trial asked for an operation and none was left: the allocation exits, freeing slots."""
    alloc.released = True


def record_agent_exit(
    session: Session, alloc: Allocation, *, agent_id: str, exit_code: int | None
) -> None:
    """The allocation's processes on ``agent_id`` ended with ``exit_code`` (None: lost)."""
    # A new dict, so the JSON column sees the change; its keys keep the order of reports.
    alloc.exits = {**(alloc.exits or {}), agent_id: exit_code}


def set_rendezvous_port(session: Session, alloc: Allocation, *, port: int) -> None:
    """Reserve ``port`` (and the next) on the rank-0 agent for the ranks to meet at."""
    alloc.rendezvous_port = port


def ran_until(session: Session, trial_ids: Sequence[int]) -> dict[int, float]:
    """When each of ``trial_ids`` whose runs have all ended stopped running: its latest run's
    end. A trial with a run not ended (or none yet) is left out."""
    if not trial_ids:
        return {}
    rows = session.execute(
        select(
            Allocation.trial_id,
            func.max(Allocation.ended_at),
            func.sum(case((Allocation.ended_at.is_(None), 1), else_=0)),
        )
        .where(Allocation.trial_id.in_(trial_ids))
        .group_by(Allocation.trial_id)
    )
    return {trial: float(end) for trial, end, open_ in rows if end is not None and not open_}
