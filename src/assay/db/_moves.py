"""Checkpoint storage that moved (``moved_checkpoint_storage``): the new place of a storage's
``host_path``, an experiment's config or a job's spec with it, and which rows to read."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sqlalchemy import ColumnElement, String, cast, or_


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
