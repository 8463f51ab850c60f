"""Checkpoint storage that moved (``moved_checkpoint_storage``): the new place of a storage's
``host_path``, an experiment's config or a job's spec with it, which rows to read, and the
move of a table's rows."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sqlalchemy import ColumnElement, String, cast, or_, select
from sqlalchemy.orm import Session


def moved_host_path(path: object, moves: Mapping[str, str]) -> str | None:
    """``path`` (a storage's ``host_path``) at its new place, where it is an old path of
    ``moves`` or lies under one; None where it did not move."""
    if not isinstance(path, str):
        return None
    for old, new in moves.items():
        if path == old:
            return new
        if path.startswith(old.rstrip("/") + "/"):
            return new.rstrip("/") + path[len(old.rstrip("/")) :]
    return None


def storage_moved(doc: Mapping[str, Any] | None, moves: Mapping[str, str]) -> dict[str, Any] | None:
    """``doc`` (an experiment's config, a job's spec) with its ``shared_fs`` checkpoint storage
    at its new place; None where it did not move."""
    storage = (doc or {}).get("checkpoint_storage")
    if doc is None or not isinstance(storage, dict):
        return None
    new = moved_host_path(storage.get("host_path"), moves)
    return None if new is None else {**doc, "checkpoint_storage": {**storage, "host_path": new}}


def naming_any(column: Any, paths: Mapping[str, str]) -> ColumnElement[bool]:
    """Rows whose JSON ``column`` names one of ``paths`` in its text, as written or as JSON
    escapes it (SQLite keeps a non-ASCII character as a ``\\u`` escape): only those are read."""
    texts = sorted({t for path in paths for t in (path, json.dumps(path)[1:-1])})
    return or_(*(cast(column, String).contains(t, autoescape=True) for t in texts))


def move_storage(session: Session, model: Any, column: str, moves: Mapping[str, str]) -> list[int]:
    """The rows of ``model`` whose JSON ``column`` (a config, a spec) keeps its ``shared_fs``
    checkpoint storage at (or under) an old path of ``moves`` keep it at the new one from now
    on; their ids."""
    if not moves:
        return []
    moved = []
    for row in session.scalars(select(model).where(naming_any(getattr(model, column), moves))):
        doc = storage_moved(getattr(row, column), moves)
        if doc is not None:
            setattr(row, column, doc)
            moved.append(row.id)
    return moved
