"""Checkpoints: one row per checkpoint a trial committed to storage, by uuid."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from assay.db._models import Checkpoint, finite_json
from assay.errors import NotFound
from assay.protocol import CheckpointState


def get(session: Session, uuid: str) -> Checkpoint | None:
    return session.get(Checkpoint, uuid)


def require(session: Session, uuid: str) -> Checkpoint:
    """The checkpoint, or :class:`NotFound`."""
    ckpt = session.get(Checkpoint, uuid)
    if ckpt is None:
        raise NotFound(f"checkpoint {uuid} not found")
    return ckpt


def create(
    session: Session,
    *,
    uuid: str,
    trial_id: int,
    experiment_id: int,
    allocation_id: str,
    steps_completed: int,
    metadata: dict[str, Any],
    resources: dict[str, Any],
    size: int,
    reported_at: float,
) -> Checkpoint:
    """A new, kept (ACTIVE) checkpoint."""
    ckpt = Checkpoint(
        uuid=uuid,
        trial_id=trial_id,
        experiment_id=experiment_id,
        allocation_id=allocation_id,
        steps_completed=steps_completed,
        meta=finite_json(metadata),  # the answer shows what a later read will
        resources=resources,
        size=size,
        state=CheckpointState.ACTIVE,
        reported_at=reported_at,
    )
    session.add(ckpt)
    return ckpt


def of(
    session: Session, *, experiment_id: int | None = None, trial_id: int | None = None
) -> Sequence[Checkpoint]:
    """The checkpoints of an experiment or of a trial, by trial and step."""
    stmt = select(Checkpoint)
    if experiment_id is not None:
        stmt = stmt.where(Checkpoint.experiment_id == experiment_id)
    if trial_id is not None:
        stmt = stmt.where(Checkpoint.trial_id == trial_id)
    return session.scalars(stmt.order_by(Checkpoint.trial_id, Checkpoint.steps_completed)).all()


def saved_by(session: Session, trial_id: int, allocation_id: str) -> bool:
    """Whether the trial's run ``allocation_id`` registered any checkpoint."""
    stmt = (
        select(Checkpoint.uuid)
        .where(Checkpoint.trial_id == trial_id, Checkpoint.allocation_id == allocation_id)
        .limit(1)
    )
    return session.scalars(stmt).first() is not None


def by_uuid(session: Session, uuids: Iterable[str]) -> dict[str, Checkpoint]:
    """The checkpoints of ``uuids`` that exist, by uuid."""
    wanted = sorted(set(uuids))
    out: dict[str, Checkpoint] = {}
    for start in range(0, len(wanted), 500):
        stmt = select(Checkpoint).where(Checkpoint.uuid.in_(wanted[start : start + 500]))
        out.update((c.uuid, c) for c in session.scalars(stmt))
    return out


def experiments_deleting(session: Session) -> list[int]:
    """Experiments with checkpoints marked for deletion that were not deleted yet."""
    rows = session.execute(
        select(Checkpoint.experiment_id)
        .where(Checkpoint.state == CheckpointState.DELETING)
        .distinct()
    ).all()
    return [int(r[0]) for r in rows]


def mark_deleting(session: Session, ckpts: Iterable[Checkpoint]) -> None:
    """Mark them DELETING: their files go next; none is downloaded or registered from now."""
    for ckpt in ckpts:
        ckpt.state = CheckpointState.DELETING


def mark_deleted(session: Session, ckpt: Checkpoint) -> None:
    """The checkpoint's files are gone."""
    ckpt.state = CheckpointState.DELETED


def put_back(session: Session, ckpt: Checkpoint, *, state: str) -> None:
    """Its files could not be deleted and are all there: it goes back to ``state``, as it was."""
    ckpt.state = state
