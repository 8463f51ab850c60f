"""The one-writer rule, enforced while it is switched on: only ``assay.db`` writes a row.

Every change to a mapped row goes through a function of a ``db`` module, so "who writes this
column?" has one answer per noun. A static check cannot tell an ORM row from a dataclass with
the same attribute names, so this guard listens where SQLAlchemy itself sees the write: it
fires on every column or relationship set and every row construction, and fails the write when
the nearest caller outside SQLAlchemy is an ``assay`` module other than ``assay.db``.

It is off in production (a frame walk per attribute set costs more than it tells a running
cluster) and on in the test suite, which sets ``ASSAY_GUARD_WRITERS=1`` for itself and every
master it starts: any code path the suite reaches that writes a row outside ``db`` fails there.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from sqlalchemy import event
from sqlalchemy.orm import DeclarativeBase

from assay.errors import AssayError

ENV = "ASSAY_GUARD_WRITERS"


class WriteOutsideDb(AssayError):
    """A row was changed by code outside ``assay.db``."""


def guard_wanted() -> bool:
    return os.environ.get(ENV, "") not in ("", "0")


def guard_writers(base: type[DeclarativeBase]) -> None:
    """Make every write to a row of ``base``'s models fail unless ``assay.db`` makes it."""
    for mapper in base.registry.mappers:
        cls = mapper.class_
        for prop in (*mapper.column_attrs, *mapper.relationships):
            event.listen(getattr(cls, prop.key), "set", _on_set)
        event.listen(cls, "init", _on_init)


def _on_set(target: Any, value: Any, oldvalue: Any, initiator: Any) -> None:
    _check(f"{type(target).__name__}.{initiator.key}")


def _on_init(target: Any, args: Any, kwargs: Any) -> None:
    _check(f"a new {type(target).__name__}")


def _check(what: str) -> None:
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if not (name.startswith("sqlalchemy") or name == __name__):
            break
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return
    # Tests and tools may build rows as they like; the rule binds assay's own code.
    if name.startswith("assay.") and not (name == "assay.db" or name.startswith("assay.db.")):
        raise WriteOutsideDb(
            f"{what} was written by {name} (line {frame.f_lineno}); rows change only through "
            "a function of an assay.db module"
        )
