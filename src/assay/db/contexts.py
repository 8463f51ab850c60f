"""Contexts: uploaded context archives, stored once per content (by sha256)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session, object_session

from assay.db._models import Context, Experiment
from assay.errors import NotFound


def require(session: Session, context_id: int) -> Context:
    """The context, or :class:`NotFound`."""
    ctx = session.get(Context, context_id)
    if ctx is None:
        raise NotFound(f"context {context_id} not found")
    return ctx


def stored(
    session: Session, *, sha256: str, size: int, files: int, data: bytes, now: float
) -> Context:
    """The context with this content: the one already stored, or a new one."""
    found = session.scalars(select(Context).where(Context.sha256 == sha256)).first()
    if found is not None:
        return found
    ctx = Context(sha256=sha256, size=size, files=files, data=data, created_at=now)
    session.add(ctx)
    session.flush()
    return ctx


def archive_of(exp: Experiment) -> bytes:
    """The context archive of an experiment loaded in a session (empty if it is gone)."""
    session = object_session(exp)
    row = session.get(Context, exp.context_id) if session is not None else None
    return row.data if row is not None else b""
