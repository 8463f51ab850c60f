"""The cluster's identity: one row, made on the first start."""

from __future__ import annotations

import secrets

from sqlalchemy import select
from sqlalchemy.orm import Session

from assay.db._models import ClusterRecord


def identity(session: Session, now: float) -> str:
    """The cluster's id, made (random) the first time it is asked for."""
    row = session.scalars(select(ClusterRecord)).first()
    if row is None:
        row = ClusterRecord(id=secrets.token_hex(8), created_at=now)
        session.add(row)
    return row.id
