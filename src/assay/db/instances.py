"""Instances: machines autoscaling providers launched for pools (an agent takes its id)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from assay.db._models import Instance
from assay.protocol import InstanceState


def get(session: Session, instance_id: str) -> Instance | None:
    return session.get(Instance, instance_id)


def launching(session: Session, instance_id: str, pool: str, now: float) -> Instance:
    """A new instance whose launch command is about to run."""
    row = Instance(
        id=instance_id,
        pool=pool,
        state=InstanceState.LAUNCHING,
        launched_at=now,
        idle_since=None,
        ended_at=None,
        message="",
    )
    session.add(row)
    return row


def seen_connected(session: Session, row: Instance, *, busy: bool, at: float) -> None:
    """The instance's agent is connected: it runs, and it is idle from ``at`` unless ``busy``
    (one idle before keeps the time it became idle)."""
    row.state = InstanceState.RUNNING
    if busy:
        row.idle_since = None
    elif row.idle_since is None:
        row.idle_since = at


def mark_terminating(session: Session, row: Instance) -> None:
    """The instance's terminate command is about to run (a new master runs it again)."""
    row.state = InstanceState.TERMINATING


def command_failed(session: Session, row: Instance, *, message: str) -> None:
    """A provider command for the instance failed; ``message`` says how."""
    row.message = message


def mark_terminated(session: Session, row: Instance, *, at: float) -> None:
    """The instance's terminate command ran: its machine is gone."""
    row.state = InstanceState.TERMINATED
    row.ended_at = at


def of_pool(
    session: Session, pool: str | None, states: Sequence[InstanceState] | None
) -> Sequence[Instance]:
    """Instances of ``pool`` (all pools when None) in ``states`` (any when None), oldest first."""
    stmt = select(Instance)
    if pool is not None:
        stmt = stmt.where(Instance.pool == pool)
    if states is not None:
        stmt = stmt.where(Instance.state.in_(states))
    return session.scalars(stmt.order_by(Instance.launched_at, Instance.id)).all()
