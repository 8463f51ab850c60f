"""What every ``logs`` command shares: ``--head N``, ``--tail N`` and ``--timestamps``, as
Determined's ``det trial logs`` has them.

A line is printed as it was written (:func:`print_log_line`); a timestamp goes in front of it,
with the other prefixes, never into it, so a piped line stays byte for byte what the code wrote
after the prefix.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Annotated, Protocol, TypeVar

import typer

from assay.cli._common import fail

TailOption = Annotated[
    int | None,
    typer.Option("--tail", min=0, help="only the last N lines (with -f: then the new ones)"),
]
HeadOption = Annotated[int | None, typer.Option("--head", min=0, help="only the first N lines")]
TimestampsOption = Annotated[
    bool,
    typer.Option("--timestamps", "-t", help="put the time each line was written in front of it"),
]


class Line(Protocol):
    @property
    def id(self) -> int: ...

    @property
    def time(self) -> float: ...


L = TypeVar("L", bound=Line)
T = TypeVar("T")


def stamp(ts: float) -> str:
    """``ts`` as the prefix of a line: ISO 8601 in UTC, to the millisecond, and a space."""
    moment = datetime.fromtimestamp(ts, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z "


def check_window(head: int | None, tail: int | None, follow: bool) -> None:
    """End the command on a combination of the options that means nothing."""
    if head is not None and tail is not None:
        fail("--head and --tail pick different lines; give one of them")
    if head is not None and follow:
        fail("--head shows the first lines and stops; it does not go with --follow")


def stored_lines(
    fetch: Callable[[int], Sequence[L]],
    page: int,
    *,
    head: int | None = None,
    tail: int | None = None,
) -> tuple[list[L], int]:
    """The stored lines ``fetch(after)`` pages through (oldest first, ``page`` at most each
    time): all of them, the first ``head`` or the last ``tail``; and the id of the last line
    stored (to follow from)."""
    kept: deque[L] | list[L] = deque(maxlen=tail) if tail is not None else []
    after = 0
    while True:
        got = fetch(after)
        for entry in got:
            if head is not None and len(kept) >= head:
                return list(kept), after
            kept.append(entry)
            after = entry.id
        if len(got) < page:
            return list(kept), after


def window(lines: Iterable[T], head: int | None, tail: int | None) -> list[T]:
    """``lines`` cut to the first ``head`` or the last ``tail`` (all of them without either)."""
    if head is not None:
        return list(lines)[:head]
    if tail is not None:
        return list(deque(lines, maxlen=tail)) if tail else []
    return list(lines)
