"""What the database was sent while a test ran: for tests that show a write costs a fixed
number of statements however many rows it takes."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from sqlalchemy import event

from assay.db import Database


@contextlib.contextmanager
def statements(db: Database, verb: str) -> Iterator[list[str]]:
    """The statements beginning with ``verb`` run while in it."""
    found: list[str] = []

    def count(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        if statement.lstrip().upper().startswith(verb):
            found.append(statement)

    event.listen(db.engine, "before_cursor_execute", count)
    try:
        yield found
    finally:
        event.remove(db.engine, "before_cursor_execute", count)
