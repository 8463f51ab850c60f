"""Ids that are never handed out twice, on SQLite too.

SQLite assigns a table's next id as the largest in use plus one: once the newest experiment is
deleted, the next one would take its id, and whatever still names it (a TensorBoard's row, a
note in someone's records, a directory in storage) would point at the wrong experiment. A
deletion records the highest id it removed in ``id_floors``; a new row on SQLite takes the next
id above both the floor and the ids in use. PostgreSQL's sequences never go back, so there the
database assigns ids as usual.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from assay.db._models import Base, IdFloor


def record_deleted(session: Session, model: type[Base], highest: int | None) -> None:
    """Remember that ids up to ``highest`` of ``model``'s table were used (and are now gone)."""
    if highest is None:
        return
    name = model.__tablename__
    floor = session.get(IdFloor, name)
    if floor is None:
        session.add(IdFloor(name=name, value=highest))
    elif floor.value < highest:
        floor.value = highest


def next_id(session: Session, model: type[Base]) -> int | None:
    """The id a new row of ``model`` must take, or None to let the database choose."""
    if session.get_bind().dialect.name != "sqlite":
        return None
    floor = session.get(IdFloor, model.__tablename__)
    if floor is None:
        return None
    in_use = session.scalar(select(func.max(model.id))) or 0  # type: ignore[attr-defined]
    return max(in_use, floor.value) + 1
