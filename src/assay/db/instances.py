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
