"""Which kind of work owns each allocation (``allocation_owners``)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from assay.db._models import AllocationOwner


def record(session: Session, allocation_id: str, *, kind: str, at: float) -> None:
    """``allocation_id`` was just started by ``kind``."""
    session.add(AllocationOwner(id=allocation_id, kind=kind, created_at=at))


# Built once: every batch of log lines asks.
_KINDS_OF = select(AllocationOwner.id, AllocationOwner.kind).where(
    AllocationOwner.id.in_(bindparam("ids", expanding=True))
)


def kinds_of(session: Session, allocation_ids: Sequence[str]) -> dict[str, str]:
    """The name of the kind that owns each of ``allocation_ids`` that one owns."""
    if not allocation_ids:
        return {}
    rows = session.execute(_KINDS_OF, {"ids": list(allocation_ids)})
    return {allocation_id: kind for allocation_id, kind in rows}


def kind_of(session: Session, allocation_id: str) -> str | None:
    """The name of the kind that owns ``allocation_id``; None for an allocation of none."""
    row = session.get(AllocationOwner, allocation_id)
    return row.kind if row is not None else None
