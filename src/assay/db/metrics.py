"""Metric reports: one row per (trial, run, group, steps_completed); a repeat is ignored."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, cast

from sqlalchemy import Select, Table, and_, bindparam, select, text, union_all, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from assay.db._models import Metric, Trial, finite_json
from assay.protocol import TRAINING, VALIDATION, MetricReport

_TABLE = cast(Table, Metric.__table__)
# Built once and given the rows: one built with its rows as VALUES is compiled again for every
# report (most are a single row), which costs more than storing it.
_INSERT_IGNORING_REPEATS: dict[str, Any] = {
    "postgresql": postgresql.insert(_TABLE).on_conflict_do_nothing(),
    "sqlite": sqlite.insert(_TABLE).on_conflict_do_nothing(),
}


# On PostgreSQL every row in one statement, given as arrays: an insert given many rows is sent
# by psycopg as a statement per row, and at 1,000 agents those were most of a merged ingest's
# time in the database (B13).
_INSERT_ROWS_IGNORING_REPEATS = text(
    'INSERT INTO metrics (trial_id, run, "group", steps_completed, "values", reported_at, '
    "archived) "
    "SELECT * FROM unnest(CAST(:trial_ids AS INTEGER[]), CAST(:runs AS INTEGER[]), "
    "CAST(:groups AS VARCHAR[]), CAST(:steps AS INTEGER[]), CAST(:values AS JSON[]), "
    "CAST(:reported AS DOUBLE PRECISION[]), CAST(:archived AS BOOLEAN[])) "
    "ON CONFLICT DO NOTHING"
)


def insert(
    session: Session, trial_id: int, run: int, reports: Iterable[MetricReport], now: float
) -> None:
    """Store reports of one run, ignoring ones already stored (same group and step). A report
    without a time gets ``now``."""
    insert_runs(session, [(trial_id, run, reports, now)])


def insert_runs(
    session: Session, runs: Iterable[tuple[int, int, Iterable[MetricReport], float]]
) -> None:
    """:func:`insert` of several runs' reports (``(trial_id, run, reports, now)``), in one
    statement."""
    rows = [
        {
            "trial_id": trial_id,
            "run": run,
            "group": r.group,
            "steps_completed": r.steps_completed,
            "values": r.metrics,
            "reported_at": r.time or now,
            "archived": False,
        }
        for trial_id, run, reports, now in runs
        for r in reports
    ]
    if not rows:
        return
    dialect = session.get_bind().dialect.name
    if dialect != "postgresql" or len(rows) == 1:
        session.execute(_INSERT_IGNORING_REPEATS[dialect], rows)
        return
    session.execute(
        _INSERT_ROWS_IGNORING_REPEATS,
        {
            "trial_ids": [r["trial_id"] for r in rows],
            "runs": [r["run"] for r in rows],
            "groups": [r["group"] for r in rows],
            "steps": [r["steps_completed"] for r in rows],
            # As the column's own type writes them (NaN and infinities as strings).
            "values": [json.dumps(finite_json(r["values"])) for r in rows],
            "reported": [r["reported_at"] for r in rows],
            "archived": [False] * len(rows),
        },
    )


def _series(trial_id: int, group: str | None, include_archived: bool) -> Select[Metric]:
    conditions = [Metric.trial_id == trial_id]
    if group is not None:
        conditions.append(Metric.group == group)
    if not include_archived:
        conditions.append(Metric.archived.is_(False))
    # A total order: a read in parts and a read at once give the same rows in the same order
    # (training and validation reports at one step would otherwise tie).
    order = (Metric.steps_completed, Metric.run, Metric.group, Metric.id)
    return select(Metric).where(and_(*conditions)).order_by(*order)


def series(
    session: Session, trial_id: int, group: str | None, *, include_archived: bool = False
) -> Sequence[Metric]:
    """The trial's reports (of ``group``, or all), by step, run and group."""
    return session.scalars(_series(trial_id, group, include_archived)).all()


def series_in_parts(
    session: Session,
    trial_id: int,
    group: str | None,
    *,
    include_archived: bool = False,
    size: int = 2000,
) -> Iterator[Sequence[Metric]]:
    """:func:`series`, fetched ``size`` rows at a time: a trial can hold millions of reports,
    and a caller that lets each part go before the next holds one part's objects, not all."""
    query = _series(trial_id, group, include_archived).execution_options(yield_per=size)
    yield from session.scalars(query).partitions()


_NAMES = {
    "sqlite": 'SELECT DISTINCT m."group", j.key FROM metrics AS m, json_each(m."values") AS j '
    "WHERE m.trial_id IN :ids AND NOT m.archived AND j.type IN ('integer', 'real')",
    "postgresql": 'SELECT DISTINCT m."group", j.key FROM metrics AS m, json_each(m."values") AS j '
    "WHERE m.trial_id IN :ids AND NOT m.archived AND json_typeof(j.value) = 'number'",
}


def names(session: Session, trial_ids: Sequence[int]) -> list[tuple[str, str]]:
    """(group, name) of every numeric metric the trials reported, sorted. The database reads
    the keys itself: decoding a thousand trials' reports in Python takes seconds."""
    dialect = session.get_bind().dialect.name
    query = text(_NAMES[dialect]).bindparams(bindparam("ids", expanding=True))
    rows = session.execute(query, {"ids": list(trial_ids)}).all()
    return sorted((str(group), str(name)) for group, name in rows)


def curves(session: Session, trial_ids: Sequence[int], group: str) -> Sequence[Any]:
    """Rows (trial_id, steps_completed, values, time) of the trials' current reports of
    ``group``, by trial and step: columns only, as a thousand trials' rows may be read at once."""
    return session.execute(
        select(Metric.trial_id, Metric.steps_completed, Metric.values, Metric.reported_at)
        .where(
            Metric.trial_id.in_(list(trial_ids)),
            Metric.group == group,
            Metric.archived.is_(False),
        )
        .order_by(Metric.trial_id, Metric.steps_completed, Metric.run)
    ).all()


def archive_after(session: Session, trial_id: int, steps: int, before_run: int) -> None:
    """Mark reports of earlier runs past the step a restarted run resumes from as archived:
    the new run will report those steps again, and the series must not show both."""
    session.execute(
        update(Metric)
        .where(
            Metric.trial_id == trial_id,
            Metric.run < before_run,
            Metric.steps_completed > steps,
            Metric.archived.is_(False),
        )
        .values(archived=True)
    )


def validation_values(
    session: Session, experiment_id: int, metric: str | None
) -> list[tuple[int, int, Any]]:
    """``(trial, steps_completed, value of metric)`` of the experiment's current validations."""
    if metric is None:
        return []
    rows = session.execute(
        select(Metric.trial_id, Metric.steps_completed, Metric.values)
        .join(Trial, Metric.trial_id == Trial.id)
        .where(
            Trial.experiment_id == experiment_id,
            Metric.group == VALIDATION,
            Metric.archived.is_(False),
        )
    ).all()
    return [(t, s, (v or {}).get(metric)) for t, s, v in rows]


def latest(
    session: Session, trial_ids: Sequence[int], groups: Sequence[str] = (TRAINING, VALIDATION)
) -> dict[int, dict[str, Metric]]:
    """Per trial, its latest current (not archived) report of each of ``groups``, by step (of
    two runs that reported the same step, the later run's): what its views show as its latest
    training and validation metrics."""
    if not trial_ids:
        return {}
    # One index probe per trial and group (the index on trial, group and step, read from its
    # end): ranking every report of the trials instead reads all of them, 5 M rows for an
    # experiment of 50,000 trials, and a join against per-group maxima lets PostgreSQL's
    # planner scan the whole table.
    newest = [
        select(
            select(Metric.id)
            .where(
                Metric.trial_id == Trial.id,
                Metric.group == group,
                Metric.archived.is_(False),
            )
            .order_by(Metric.steps_completed.desc(), Metric.run.desc())
            .limit(1)
            .correlate(Trial)
            .scalar_subquery()
        ).where(Trial.id.in_(list(trial_ids)))
        for group in groups
    ]
    rows = session.scalars(select(Metric).where(Metric.id.in_(union_all(*newest)))).all()
    out: dict[int, dict[str, Metric]] = {}
    for row in rows:
        out.setdefault(row.trial_id, {})[row.group] = row
    return out
