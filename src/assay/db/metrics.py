"""Metric reports: one row per (trial, run, group, steps_completed); a repeat is ignored."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, cast

from sqlalchemy import Table, and_, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from assay.db._models import Metric, Trial
from assay.protocol import VALIDATION, MetricReport


def insert(
    session: Session, trial_id: int, run: int, reports: Iterable[MetricReport], now: float
) -> None:
    """Store reports of one run, ignoring ones already stored (same group and step). A report
    without a time gets ``now``."""
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
        for r in reports
    ]
    if not rows:
        return
    table = cast(Table, Metric.__table__)
    stmt: Any
    if session.get_bind().dialect.name == "postgresql":
        stmt = postgresql.insert(table).values(rows).on_conflict_do_nothing()
    else:
        stmt = sqlite.insert(table).values(rows).on_conflict_do_nothing()
    session.execute(stmt)


def series(
    session: Session, trial_id: int, group: str | None, *, include_archived: bool = False
) -> Sequence[Metric]:
    """The trial's reports (of ``group``, or all), by step and run."""
    conditions = [Metric.trial_id == trial_id]
    if group is not None:
        conditions.append(Metric.group == group)
    if not include_archived:
        conditions.append(Metric.archived.is_(False))
    return session.scalars(
        select(Metric).where(and_(*conditions)).order_by(Metric.steps_completed, Metric.run)
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


def latest(session: Session, trial_ids: Sequence[int]) -> dict[int, dict[str, Metric]]:
    """Per trial, its latest current (not archived) report of each group, by step: what its
    views show as its latest training and validation metrics."""
    if not trial_ids:
        return {}
    top = (
        select(
            Metric.trial_id,
            Metric.group,
            func.max(Metric.steps_completed).label("steps"),
        )
        .where(Metric.trial_id.in_(list(trial_ids)), Metric.archived.is_(False))
        .group_by(Metric.trial_id, Metric.group)
        .subquery()
    )
    rows = session.scalars(
        select(Metric)
        .join(
            top,
            and_(
                Metric.trial_id == top.c.trial_id,
                Metric.group == top.c.group,
                Metric.steps_completed == top.c.steps,
            ),
        )
        .where(Metric.archived.is_(False))
        # Two runs may have reported the same step (one archived is left out above); the later
        # run wins.
        .order_by(Metric.run)
    ).all()
    out: dict[int, dict[str, Metric]] = {}
    for row in rows:
        out.setdefault(row.trial_id, {})[row.group] = row
    return out
