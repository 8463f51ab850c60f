"""Agents: every agent that ever connected, with its slots and whether it is connected now."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from assay.db._models import AgentRecord


def get(session: Session, agent_id: str) -> AgentRecord | None:
    return session.get(AgentRecord, agent_id)


def registered(session: Session) -> Sequence[AgentRecord]:
    """Every agent the cluster knows, by id."""
    return session.scalars(select(AgentRecord).order_by(AgentRecord.id)).all()


def connected(
    session: Session,
    agent_id: str,
    *,
    pool: str,
    labels: list[str],
    slots: list[dict[str, Any]],
    address: str,
    version: str,
    now: float,
    container_runtime: str = "",
) -> AgentRecord:
    """Record that the agent connected with this description (registering a new one,
    enabled); returns its row (whether it is ``enabled`` stays as it was)."""
    row = session.get(AgentRecord, agent_id)
    if row is None:
        row = AgentRecord(id=agent_id, enabled=True, registered_at=now)
        session.add(row)
    row.pool = pool
    row.labels = list(labels)
    row.slots = list(slots)
    row.connected = True
    row.last_seen = now
    row.address = address
    row.version = version
    row.container_runtime = container_runtime
    return row


def pool_runs_containers(session: Session, pool: str) -> bool:
    """Whether an agent of ``pool`` (connected now or not) last said it runs containers."""
    found = session.scalars(
        select(AgentRecord.id)
        .where(AgentRecord.pool == pool, AgentRecord.container_runtime != "")
        .limit(1)
    ).first()
    return found is not None


def disconnected(session: Session, agent_id: str, now: float) -> None:
    row = session.get(AgentRecord, agent_id)
    if row is not None:
        row.connected = False
        row.last_seen = now


def disconnect_all(session: Session) -> None:
    """A master starting has no connection yet: no agent is connected."""
    session.execute(update(AgentRecord).values(connected=False))


def disable(session: Session, agent_id: str) -> None:
    """Nothing new may start on the agent (its machine is about to go away)."""
    row = session.get(AgentRecord, agent_id)
    if row is not None:
        row.enabled = False
