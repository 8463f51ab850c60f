"""Trials: one row per hyperparameter configuration of an experiment."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, cast

from sqlalchemy import (
    Float,
    Integer,
    Select,
    Table,
    bindparam,
    case,
    func,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value
from sqlalchemy.orm.util import identity_key

from assay.db._ids import next_id
from assay.db._models import Experiment, Job, Trial
from assay.errors import NotFound
from assay.protocol import TERMINAL_TRIAL_STATES, ExperimentState, TrialState

# Statements run for every trial's start, report or end, built once: building one (and its
# cache key) costs more than SQLite takes to run it.
_QUEUED = (
    select(Trial, Experiment, Job)
    .join(Experiment, Trial.experiment_id == Experiment.id)
    .join(Job, Experiment.job_id == Job.id)
    .where(Trial.state == TrialState.QUEUED, Experiment.state == ExperimentState.ACTIVE)
    .order_by(Trial.id)
)
_SEQUENCE_NUMBER = (
    select(func.count())
    .select_from(Trial)
    .where(Trial.experiment_id == bindparam("experiment_id"), Trial.id < bindparam("trial_id"))
)
_BY_IDS = select(Trial).where(Trial.id.in_(bindparam("ids", expanding=True)))
_EXPERIMENTS_OF = (
    select(Trial.id, Trial.experiment_id, Experiment.source)
    .join(Experiment, Trial.experiment_id == Experiment.id)
    .where(Trial.id.in_(bindparam("ids", expanding=True)))
)
_STORED_BY_IDS = _BY_IDS.execution_options(populate_existing=True)
_TABLE = cast(Table, Trial.__table__)
_STEPS = bindparam("steps", type_=Integer)
_SCORE = bindparam("score", type_=Float)
_RAISED_STEPS = case((_TABLE.c.steps_completed < _STEPS, _STEPS), else_=_TABLE.c.steps_completed)
_BEATEN = or_(_TABLE.c.best_score.is_(None), _TABLE.c.best_score > _SCORE)
_REPORTED = update(_TABLE).where(_TABLE.c.id == bindparam("trial_id"))
_AS_STORED = (
    _TABLE.c.experiment_id,
    _TABLE.c.steps_completed,
    _TABLE.c.best_validation,
    _TABLE.c.best_score,
)
_REPORTED_STEPS = _REPORTED.values(steps_completed=_RAISED_STEPS).returning(*_AS_STORED)
_REPORTED_STEPS_AND_BEST = _REPORTED.values(
    steps_completed=_RAISED_STEPS,
    best_validation=case(
        (_BEATEN, bindparam("value", type_=Float)), else_=_TABLE.c.best_validation
    ),
    best_score=case((_BEATEN, _SCORE), else_=_TABLE.c.best_score),
).returning(*_AS_STORED)


def get(session: Session, trial_id: int) -> Trial | None:
    return session.get(Trial, trial_id)


def require(session: Session, trial_id: int) -> Trial:
    """The trial, or :class:`NotFound`."""
    trial = session.get(Trial, trial_id)
    if trial is None:
        raise NotFound(f"trial {trial_id} not found")
    return trial


def ids_in_experiment(session: Session, experiment_id: int, trial_ids: Sequence[int]) -> set[int]:
    """Those of ``trial_ids`` that are trials of the experiment."""
    return set(
        session.scalars(
            select(Trial.id).where(Trial.experiment_id == experiment_id, Trial.id.in_(trial_ids))
        )
    )


def create(
    session: Session,
    *,
    experiment_id: int,
    request_id: str,
    hparams: dict[str, Any],
    seed: int,
    state: TrialState,
    source_checkpoint: str | None,
    created_at: float,
) -> Trial:
    """A new trial that has not run yet, resuming from ``source_checkpoint`` if any; its id
    assigned."""
    trial = Trial(
        experiment_id=experiment_id,
        request_id=request_id,
        hparams=hparams,
        seed=seed,
        state=state,
        restarts=0,
        infra_restarts=0,
        lost_in_row=0,
        runs=0,
        steps_completed=0,
        source_checkpoint=source_checkpoint,
        latest_checkpoint=source_checkpoint,
        progress=0.0,
        early_stopped=False,
        message="",
        created_at=created_at,
    )
    if (given := next_id(session, Trial)) is not None:
        trial.id = given
    session.add(trial)
    session.flush()
    return trial


def by_request(session: Session, experiment_id: int, request_id: str) -> Trial | None:
    """The trial the experiment's searcher knows as ``request_id``."""
    return session.scalars(
        select(Trial).where(Trial.experiment_id == experiment_id, Trial.request_id == request_id)
    ).first()


def training_reports(
    session: Session, experiment_id: int, request_ids: Sequence[str]
) -> list[tuple[str, float, int]]:
    """What the trials the searcher knows as ``request_ids`` reported of their training:
    ``(request_id, progress, steps_completed)`` each (one index probe per trial, however many
    trials the experiment has)."""
    return training_reports_of(session, {experiment_id: request_ids}).get(experiment_id, [])


def training_reports_of(
    session: Session, wanted: Mapping[int, Sequence[str]]
) -> dict[int, list[tuple[str, float, int]]]:
    """:func:`training_reports` of several experiments (``wanted``: each one's request ids) in
    one query: checkpoints registered together touch many experiments."""
    pairs = [(e, r) for e, ids in sorted(wanted.items()) for r in ids]
    if not pairs:
        return {}
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        params: dict[str, Any] = {"exps": [e for e, _ in pairs], "rids": [r for _, r in pairs]}
    else:
        params = {"pairs": json.dumps(pairs)}
    found: dict[int, list[tuple[str, float, int]]] = {}
    for e, r, p, s in session.execute(_TRAINING_REPORTS_OF[dialect], params):
        found.setdefault(int(e), []).append((str(r), float(p), int(s)))
    return found


# The pairs given as arrays (PostgreSQL) or a JSON array (SQLite), so the statement's text is
# the same whatever their number: one with a placeholder per pair was parsed again by the
# driver each time (a twentieth of the master's time at 1,000 agents, B13).
_TRAINING_REPORTS_OF = {
    "postgresql": text(
        "SELECT trials.experiment_id, trials.request_id, trials.progress, trials.steps_completed "
        "FROM trials JOIN unnest(CAST(:exps AS INTEGER[]), CAST(:rids AS VARCHAR[])) "
        "AS wanted(experiment_id, request_id) "
        "ON trials.experiment_id = wanted.experiment_id AND trials.request_id = wanted.request_id"
    ),
    "sqlite": text(
        "SELECT trials.experiment_id, trials.request_id, trials.progress, trials.steps_completed "
        "FROM trials JOIN (SELECT json_extract(value, '$[0]') AS experiment_id, "
        "json_extract(value, '$[1]') AS request_id FROM json_each(:pairs)) AS wanted "
        "ON trials.experiment_id = wanted.experiment_id AND trials.request_id = wanted.request_id"
    ),
}


def live_of(session: Session, experiment_id: int) -> Sequence[Trial]:
    """The experiment's trials that have not ended, oldest first."""
    return session.scalars(
        select(Trial)
        .where(Trial.experiment_id == experiment_id, Trial.state.not_in(TERMINAL_TRIAL_STATES))
        .order_by(Trial.id)
    ).all()


def of_experiment(session: Session, experiment_id: int) -> Sequence[Trial]:
    return session.scalars(
        select(Trial).where(Trial.experiment_id == experiment_id).order_by(Trial.id)
    ).all()


SORTS = ("id", "state", "steps", "restarts", "best")
"""What :func:`page_of` sorts by (the values of ``rest.TrialSort``)."""


def page_of(
    session: Session,
    experiment_id: int,
    *,
    states: Sequence[str] = (),
    sort: str = "id",
    descending: bool = False,
    limit: int | None = None,
    offset: int = 0,
) -> tuple[Sequence[Trial], int]:
    """A page of the experiment's trials (of ``states`` when given) sorted by ``sort`` (one of
    :data:`SORTS`; ties by id the same way), and how many match.

    ``best`` sorts by the normalised score, so ascending is best first whichever way the
    experiment's metric points; trials without a validation come last either way."""
    where = [Trial.experiment_id == experiment_id]
    if states:
        where.append(Trial.state.in_(list(states)))
    total = session.scalar(select(func.count()).select_from(Trial).where(*where)) or 0
    key: Any = {
        "id": None,
        "state": Trial.state,
        "steps": Trial.steps_completed,
        "restarts": Trial.restarts,
        "best": Trial.best_score,
    }[sort]
    order: list[Any] = []
    if key is not None:
        order.append(key.desc().nulls_last() if descending else key.asc().nulls_last())
    order.append(Trial.id.desc() if descending else Trial.id.asc())
    # The ids first, sorted on what the indexes hold, then only the page's rows: sorting whole
    # rows (hyperparameters and all) of a large experiment costs many times more.
    query = select(Trial.id).where(*where).order_by(*order).offset(offset)
    if limit is not None:
        query = query.limit(limit)
    return _in_order(session, list(session.scalars(query))), int(total)


def _in_order(session: Session, ids: list[int]) -> list[Trial]:
    found = by_ids(session, ids)
    return [found[i] for i in ids if i in found]


def by_ids(session: Session, ids: Sequence[int]) -> dict[int, Trial]:
    """The trials of ``ids`` that exist, by id, in one query (a batch of reports from many)."""
    return {t.id: t for t in _by_ids(session, sorted(set(ids)), _BY_IDS)}


def experiments_of(session: Session, ids: Sequence[int]) -> dict[int, tuple[int, str]]:
    """The experiment of each trial of ``ids`` that exists, and that experiment's config source
    (``rest.ConfigSource``), by trial id: read without loading either row (an experiment's row
    holds its whole config, which a thousand agents' reports and log lines never need)."""
    wanted = sorted(set(ids))
    found: dict[int, tuple[int, str]] = {}
    for start in range(0, len(wanted), 10_000):
        rows = session.execute(_EXPERIMENTS_OF, {"ids": wanted[start : start + 10_000]})
        found.update((int(t), (int(e), str(s))) for t, e, s in rows)
    return found


def as_stored(session: Session, ids: Sequence[int]) -> list[Trial]:
    """The trials, by id, as the database holds them now (rows this session loaded are read
    again: metric reports move a trial's steps outside the master's lock); a trial not there
    is left out."""
    return sorted(_by_ids(session, ids, _STORED_BY_IDS), key=lambda t: t.id)


def _by_ids(session: Session, ids: Sequence[int], statement: Select[Trial]) -> list[Trial]:
    found: list[Trial] = []
    # In chunks: more ids than a statement may bind.
    for start in range(0, len(ids), 10_000):
        found += session.scalars(statement, {"ids": list(ids[start : start + 10_000])}).all()
    return found


def queued(session: Session) -> list[tuple[Trial, Experiment, Job]]:
    """Trials waiting for slots in active experiments, with their experiment and job."""
    rows = session.execute(_QUEUED).all()
    return [(t, e, j) for t, e, j in rows]


def queued_by_experiment(session: Session, pool: str) -> list[tuple[Experiment, int]]:
    """``pool``'s active experiments with queued trials, and how many each has queued."""
    rows = session.execute(
        select(Experiment, func.count())
        .join(Trial, Trial.experiment_id == Experiment.id)
        .join(Job, Experiment.job_id == Job.id)
        .where(
            Job.pool == pool,
            Trial.state == TrialState.QUEUED,
            Experiment.state == ExperimentState.ACTIVE,
        )
        .group_by(Experiment.id)
    ).all()
    return [(exp, int(n)) for exp, n in rows]


def counts(session: Session, experiment_ids: Sequence[int]) -> dict[int, dict[str, int]]:
    """Per experiment, how many of its trials are in each state."""
    found: dict[int, dict[str, int]] = {i: {} for i in experiment_ids}
    if not experiment_ids:
        return found
    for exp_id, state, n in session.execute(
        select(Trial.experiment_id, Trial.state, func.count())
        .where(Trial.experiment_id.in_(experiment_ids))
        .group_by(Trial.experiment_id, Trial.state)
    ):
        found[exp_id][state] = int(n)
    return found


def best_of(session: Session, experiment_id: int) -> Trial | None:
    """The experiment's trial with the best searcher metric so far."""
    return session.scalars(
        select(Trial)
        .where(Trial.experiment_id == experiment_id, Trial.best_score.is_not(None))
        .order_by(Trial.best_score, Trial.id)
        .limit(1)  # without it, first() still loads every trial of the experiment
    ).first()


def finished_results(
    session: Session, experiment_id: int
) -> list[tuple[int, dict[str, Any], float]]:
    """``(id, hparams, best searcher metric)`` of the experiment's COMPLETED trials that have
    a metric, oldest first: what hyperparameter importance is computed on."""
    rows = session.execute(
        select(Trial.id, Trial.hparams, Trial.best_validation)
        .where(
            Trial.experiment_id == experiment_id,
            Trial.state == TrialState.COMPLETED,
            Trial.best_validation.is_not(None),
        )
        .order_by(Trial.id)
    )
    return [(int(i), dict(h or {}), float(v)) for i, h, v in rows if v is not None]


def best_of_each(session: Session, experiment_ids: Sequence[int]) -> dict[int, Trial]:
    """The best trial of each experiment that has one (one query, for a page of a list)."""
    if not experiment_ids:
        return {}
    rank = (
        func.row_number()
        .over(partition_by=Trial.experiment_id, order_by=(Trial.best_score, Trial.id))
        .label("rank")
    )
    ranked = (
        select(Trial.id, rank)
        .where(Trial.experiment_id.in_(experiment_ids), Trial.best_score.is_not(None))
        .subquery()
    )
    rows = session.scalars(
        select(Trial).join(ranked, ranked.c.id == Trial.id).where(ranked.c.rank == 1)
    )
    return {row.experiment_id: row for row in rows}


def sequence_number(session: Session, trial: Trial) -> int:
    """The trial's place among its experiment's trials, from 0 (NNI's sequence id)."""
    return int(
        session.scalar(
            _SEQUENCE_NUMBER, {"experiment_id": trial.experiment_id, "trial_id": trial.id}
        )
        or 0
    )


def starting_from(session: Session, uuids: set[str]) -> Sequence[Trial]:
    """The trials that start from one of the checkpoints ``uuids`` (continued, or warm-started)."""
    if not uuids:
        return []
    return session.scalars(select(Trial).where(Trial.source_checkpoint.in_(uuids))).all()


def record_reported(
    session: Session, trial_id: int, steps: int, best: tuple[float, float] | None = None
) -> tuple[int, int, float | None] | None:
    """A report's mark on its trial in one statement, so concurrent reports (metrics outside
    the master's lock, checkpoints inside it) never move it backwards: ``steps_completed =
    max(steps_completed, steps)``, and ``best`` (a validation's value and its score, the value
    normalised so smaller is better) as the best validation if its score beats the stored one.

    Returns the trial's experiment, steps completed and best validation as stored after it
    (None: no such trial); a copy of the row the session holds is brought up to date."""
    if best is None:
        found = session.execute(_REPORTED_STEPS, {"trial_id": trial_id, "steps": steps}).first()
    else:
        value, score = best
        params = {"trial_id": trial_id, "steps": steps, "value": value, "score": score}
        found = session.execute(_REPORTED_STEPS_AND_BEST, params).first()
    if found is None:
        return None
    experiment_id, steps_completed, best_validation, best_score = found
    _refresh(session, trial_id, steps_completed, best_validation, best_score)
    return int(experiment_id), int(steps_completed), best_validation


def _refresh(
    session: Session,
    trial_id: int,
    steps_completed: int,
    best_validation: float | None,
    best_score: float | None,
) -> None:
    """The session's copy of the trial, if it holds one, as an UPDATE ... RETURNING left it."""
    held = session.identity_map.get(identity_key(Trial, trial_id))
    if held is not None:
        set_committed_value(held, "steps_completed", steps_completed)
        set_committed_value(held, "best_validation", best_validation)
        set_committed_value(held, "best_score", best_score)


_RETURNED = (
    "RETURNING trials.id, trials.experiment_id, trials.steps_completed, trials.best_validation, "
    "trials.best_score"
)
# One statement for every trial's steps and best validation, its rows given as arrays
# (PostgreSQL) or a JSON array of rows (SQLite): compiled once, whatever the number of trials.
# Each SET reads the row as it was, so the best is replaced only when the reported score beats
# the stored one, as in :func:`record_reported`.
_BEATS = (
    "reported.score IS NOT NULL "
    "AND (trials.best_score IS NULL OR trials.best_score > reported.score)"
)
_MARKS = (
    f"best_validation = CASE WHEN {_BEATS} THEN reported.value ELSE trials.best_validation END, "
    f"best_score = CASE WHEN {_BEATS} THEN reported.score ELSE trials.best_score END "
)
_MARKS_OF_MANY = {
    "postgresql": text(
        "UPDATE trials SET steps_completed = GREATEST(trials.steps_completed, reported.steps), "
        f"{_MARKS}"
        "FROM unnest(CAST(:ids AS INTEGER[]), CAST(:steps AS INTEGER[]), "
        "CAST(:values AS DOUBLE PRECISION[]), CAST(:scores AS DOUBLE PRECISION[])) "
        "AS reported(id, steps, value, score) "
        f"WHERE trials.id = reported.id {_RETURNED}"
    ),
    "sqlite": text(
        "UPDATE trials SET steps_completed = max(trials.steps_completed, reported.steps), "
        f"{_MARKS}"
        "FROM (SELECT json_extract(value, '$[0]') AS id, json_extract(value, '$[1]') AS steps, "
        "json_extract(value, '$[2]') AS value, json_extract(value, '$[3]') AS score "
        "FROM json_each(:rows)) AS reported "
        f"WHERE trials.id = reported.id {_RETURNED}"
    ),
}


def record_steps(
    session: Session,
    steps: Mapping[int, int],
    best: Mapping[int, tuple[float, float]] | None = None,
) -> dict[int, tuple[int, int, float | None]]:
    """:func:`record_reported` for many trials (``steps``: the most each reported; ``best``:
    the best validation each reported, as its value and score, for those that did), in one
    statement: each found trial's experiment, steps completed and best validation as stored
    after it. Every trial was a round trip of its own, and on PostgreSQL those were most of the
    time a thousand agents' reports took to store (B13)."""
    if not steps:
        return {}
    best = best or {}
    dialect = session.get_bind().dialect.name
    # By id, as every transaction that raises several trials' steps should take their rows
    # (two taking them in opposite orders could deadlock on PostgreSQL).
    rows = [(i, n, *best.get(i, (None, None))) for i, n in sorted(steps.items())]
    if dialect == "postgresql":
        ids, counts, values, scores = zip(*rows, strict=True)
        params: dict[str, Any] = {
            "ids": list(ids),
            "steps": list(counts),
            "values": list(values),
            "scores": list(scores),
        }
    else:
        params = {"rows": json.dumps(rows)}
    found = session.execute(_MARKS_OF_MANY[dialect], params).all()
    out: dict[int, tuple[int, int, float | None]] = {}
    for trial_id, experiment_id, steps_completed, best_validation, best_score in found:
        _refresh(session, trial_id, steps_completed, best_validation, best_score)
        out[int(trial_id)] = (int(experiment_id), int(steps_completed), best_validation)
    return out


def set_state(
    session: Session, trial: Trial, *, state: TrialState, message: str | None = None
) -> None:
    """The trial moves to ``state`` without ending; ``message``, when given, is its message."""
    trial.state = state
    if message is not None:
        trial.message = message


def end(
    session: Session,
    trial: Trial,
    *,
    state: TrialState,
    at: float,
    early_stopped: bool = False,
    message: str = "",
) -> None:
    """The trial ended in ``state`` at ``at``; completed, it made all its progress."""
    trial.state = state
    trial.ended_at = at
    trial.early_stopped = trial.early_stopped or early_stopped
    if state == TrialState.COMPLETED:
        trial.progress = 1.0
    if message:
        trial.message = message


def set_progress(session: Session, trial: Trial, progress: float) -> None:
    """The share of its current operation the trial has done, from 0 to 1."""
    trial.progress = progress


def mark_started(session: Session, trial: Trial, *, at: float) -> None:
    """The trial's first run started running at ``at``."""
    trial.started_at = at


def begin_run(session: Session, trial: Trial, *, message: str | None = None) -> None:
    """A new run of the trial is counted; ``message``, when given, is its message."""
    trial.runs += 1
    if message is not None:
        trial.message = message


def mark_running(session: Session, trial: Trial, *, steps_completed: int) -> None:
    """Its new run was placed: the trial runs, from ``steps_completed`` again."""
    trial.steps_completed = steps_completed
    trial.state = TrialState.RUNNING


def record_exit(
    session: Session,
    trial: Trial,
    *,
    restarts: int,
    infra_restarts: int,
    lost_in_row: int,
    resume_from: str | None,
) -> None:
    """What a run's end leaves the trial: its restart counts and the checkpoint to resume."""
    trial.restarts = restarts
    trial.infra_restarts = infra_restarts
    trial.lost_in_row = lost_in_row
    trial.latest_checkpoint = resume_from


def set_latest_checkpoint(session: Session, trial: Trial, *, uuid: str) -> None:
    """Checkpoint ``uuid`` is the one the trial's next run resumes from."""
    trial.latest_checkpoint = uuid


def set_early_exit(session: Session, trial: Trial, *, reason: str) -> None:
    """The trial's code said it exits early, for ``reason`` (an ``ExitedReason``)."""
    trial.early_exit = reason


def set_waiting_at(session: Session, trial: Trial, *, stage: str | None) -> None:
    """Where its searcher released the trial to wait (``rung 2 of 4``; None: no stages)."""
    trial.waiting_at = stage
