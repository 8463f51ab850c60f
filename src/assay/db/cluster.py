"""The cluster's identity and agent token: one row, made on the first start."""

from __future__ import annotations

import secrets

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from assay.db._models import ClusterRecord


def identity(session: Session, now: float) -> str:
    """The cluster's id, made (random) the first time it is asked for."""
    row = session.scalars(select(ClusterRecord)).first()
    if row is None:
        row = ClusterRecord(id=secrets.token_hex(8), created_at=now)
        session.add(row)
    return row.id


def agent_token(session: Session, candidate: str) -> tuple[str, bool]:
    """The cluster's agent token, and whether it is ``candidate``, stored now because there was
    none. Call after :func:`identity` made the row.

    Masters sharing a database may start at once: the update only fills an empty token (on
    PostgreSQL the second waits for the first's commit and then finds it filled), and each
    then reads the one that won.
    """
    result = session.execute(
        update(ClusterRecord)
        .where(ClusterRecord.agent_token.is_(None))
        .values(agent_token=candidate)
        .execution_options(synchronize_session=False)
    )
    token = session.scalars(select(ClusterRecord.agent_token)).first()
    assert token, "identity() makes the cluster row first"
    return token, bool(getattr(result, "rowcount", 0))
