"""Tables that fit the terminal without splitting a cell, as ``kubectl`` and ``det`` print them.

Rich fits a table that is too wide by wrapping its cells, which splits words and numbers across
lines (``RUNNI``/``NG``, ``2026-11-``/``29``). Here every cell stays on one line. On a terminal
too narrow for a table, its long free-text columns (a description, hyperparameters) are
shortened first, ending in "…", down to a few characters; then columns of less interest are left
out, the least important first. Identifiers, names, states and numbers are never shortened (a cut
id or number reads as another one), and the first column is never left out. Into a pipe or a file
the console is as wide as the longest line (``PIPE_WIDTH``), so nothing is cut or left out there.

How a column is treated follows from its header (:data:`COLUMN_RULES`): each header means the
same in every listing, so the rules are written once, here.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
    from rich.table import Column

MIN_CUT = 12
"""The fewest characters a shortened column keeps (its header's, when that is longer)."""


class Rule(NamedTuple):  # a NamedTuple: see _lazy.Subcommand
    """How a column gives way on a narrow terminal. ``rank`` 0: never left out; a higher rank
    is left out before a lower one. ``cut``: may be shortened, ending in "…"."""

    rank: int
    cut: bool = False


KEY = Rule(0)
DEFAULT = Rule(5)

COLUMN_RULES: dict[str, Rule] = {
    # What a row is: never cut, never left out.
    **dict.fromkeys(
        (
            "id", "#", "trial", "uuid", "name", "state", "status", "username", "agent id",
            "slot id", "path", "job", "job name", "trialjobid", "sequenceid", "experimentname",
            "experiment", "role", "index",
        ),
        KEY,
    ),
    # Free text: shortened first; left out last among what may be.
    "hyperparameters": Rule(4, cut=True),
    "hyperparameter": Rule(4, cut=True),
    "parameters": Rule(4, cut=True),
    "latest training": Rule(6, cut=True),
    "latest validation": Rule(6, cut=True),
    **dict.fromkeys(("message", "command", "commands", "why it waits"), Rule(6, cut=True)),
    # Of less interest on a narrow terminal: left out first.
    **dict.fromkeys(
        ("description", "model versions", "labels"),
        Rule(9, cut=True),
    ),
    **dict.fromkeys(
        ("archived", "agent losses", "revoked", "preemption", "url", "device", "address"),
        Rule(9),
    ),
    "failures": Rule(7),
    **dict.fromkeys(
        (
            "checkpoint", "searcher", "endtime", "ended", "exit", "exit code", "retries",
            "ports", "host",
        ),
        Rule(5),
    ),
    **dict.fromkeys(
        (
            "user", "owner", "created", "started", "reported", "updated",
            "expires", "starttime", "scheduler", "agents", "slots", "allocated", "connected",
            "admin", "active", "versions", "latest", "type", "pool", "enabled", "seen",
            "registered", "submitted", "priority", "weight", "cpu", "memory mb", "agent",
        ),
        Rule(3),
    ),
    **dict.fromkeys(
        (
            "steps", "progress", "trials", "size", "metric", "value", "version", "instances",
            "slots (acquired/needed)",
        ),
        Rule(2),
    ),
}  # fmt: skip
"""Each header's rule, by its lower-cased text; a header not named here (a metric's name)
is a number or a word: never shortened, left out in the middle of the order."""


def rule_of(header: str) -> Rule:
    key = header.strip().lower()
    if key.startswith("best "):  # "Best validation_loss": the searcher metric's best
        return Rule(2)
    return COLUMN_RULES.get(key, DEFAULT)


class Need(NamedTuple):
    """What a column needs: its full width (the widest cell or header), the fewest characters
    it can be shortened to (its full width unless it may be cut), and its rule."""

    full: int
    least: int
    rule: Rule


def plan(needs: Sequence[Need], paddings: Sequence[int], width: int) -> list[int | None]:
    """The width of each column (None: left out) so that the table fits ``width``: columns
    that may be cut are shortened before any is left out, columns are left out highest rank
    first (the rightmost of a rank first), the first column never. When even the columns that
    may not be left out do not fit, they are kept whole and the table is wider than ``width``
    (the terminal wraps its lines; no cell is split by the table)."""
    order = sorted(
        (i for i in range(1, len(needs)) if needs[i].rule.rank > 0),
        key=lambda i: (-needs[i].rule.rank, -i),
    )
    for dropped in range(len(order) + 1):
        gone = set(order[:dropped])
        kept = [i for i in range(len(needs)) if i not in gone]
        least = sum(needs[i].least + paddings[i] for i in kept)
        if least <= width or dropped == len(order):
            return _widen(needs, kept, width - least, len(needs))
    raise AssertionError("unreachable: the last choice is taken whatever its width")


def _widen(needs: Sequence[Need], kept: list[int], room: int, count: int) -> list[int | None]:
    """Each kept column at its least width, then ``room`` shared among the shortened ones,
    the narrowest first, up to their full width."""
    widths: list[int | None] = [None] * count
    for i in kept:
        widths[i] = needs[i].least
    short = sorted((i for i in kept if needs[i].least < needs[i].full), key=lambda i: needs[i].full)
    for n, i in enumerate(short):
        share = max(0, room) // (len(short) - n)
        grant = min(share, needs[i].full - needs[i].least)
        widths[i] = needs[i].least + grant
        room -= grant
    return widths


# Rich's pattern of an emoji code in markup (":thumbs_up:", ":smile-emoji:"), as it finds them.
_EMOJI_CODE = re.compile(r":(\S*?)(?:-(?:emoji|text))?:")


def _may_name_emoji(text: str) -> bool:
    """Whether rich could replace an emoji code in ``text``: no emoji is named by two digits
    (tested), so a time's ``08:23:33`` holds none, and the table of emoji codes, which rich
    loads to look any code up, is not loaded for a listing with no other ``:``."""
    return any(not (len(name) == 2 and name.isdigit()) for name in _EMOJI_CODE.findall(text))


def read_cell(cell: RenderableType) -> RenderableType:
    """A cell as rich reads it when it renders it (markup, emoji codes), read once: a cell
    that is text is measured and then rendered from this."""
    if isinstance(cell, str):
        return Text.from_markup(cell, emoji=_may_name_emoji(cell))
    return cell


def _cell_width(console: Console, options: ConsoleOptions, cell: RenderableType) -> int:
    if isinstance(cell, Text):
        return max((line.cell_len for line in cell.split("\n")), default=0)
    return Measurement.get(console, options, cell).maximum


def plain(cell: object) -> str:
    """What a cell (or a header) reads as, its markup taken off: what CSV writes."""
    if isinstance(cell, Text):
        return cell.plain
    return Text.from_markup(str(cell), emoji=_may_name_emoji(str(cell))).plain


def _header_text(column: Column) -> str:
    return plain(column.header)


def _padding(table: Table, index: int, count: int) -> int:
    """The width the table's padding adds to column ``index`` of ``count``."""
    _, right, _, left = table.padding
    if table.collapse_padding:
        left, right = 0, abs(left - right)
    if not table.pad_edge:
        left = 0 if index == 0 else left
        right = 0 if index == count - 1 else right
    return left + right


def fitted(table: Table, console: Console, options: ConsoleOptions) -> tuple[Table, list[str]]:
    """A copy of ``table`` that fits ``options.max_width`` with no cell split across lines,
    and the headers of the columns it leaves out."""
    columns = list(table.columns)
    if not columns:
        return table, []
    needs = []
    read = [[read_cell(c) for c in column.cells] for column in columns]
    for column, cells_read in zip(columns, read, strict=True):
        header = _header_text(column)
        rule = rule_of(header)
        cells = [_cell_width(console, options, c) for c in cells_read]
        full = max([len(header), *cells, 1])
        least = min(full, max(MIN_CUT, len(header))) if rule.cut else full
        needs.append(Need(full, least, rule))
    extra = (2 if table.show_edge else 0) + len(columns) - 1 if table.box else 0
    width = options.max_width - extra
    # A column left out no longer pads its neighbours: the padding of the kept ones is counted
    # as if they were all kept (exact for the usual padding, one column's worth over at most).
    paddings = [_padding(table, i, len(columns)) for i in range(len(columns))]
    widths = plan(needs, paddings, width)
    # Even the columns that are never left out are wider than the terminal (a very narrow
    # one): they fold, since a line cropped at the edge would hide what they hold.
    folds = sum(w + paddings[i] for i, w in enumerate(widths) if w is not None) > width
    shown: Table = Table.__new__(Table)
    shown.__dict__.update(table.__dict__)
    shown.columns = []
    for column, cells_read, need, w in zip(columns, read, needs, widths, strict=True):
        if w is None:
            continue
        index = len(shown.columns)
        # The cells as read above, and the header: rich renders them as they are.
        kept = dataclasses.replace(
            column, _cells=cells_read, _index=index, header=read_cell(column.header)
        )
        if folds:
            kept = dataclasses.replace(kept, no_wrap=False, overflow="fold")
        else:
            cut = w < need.full
            kept = dataclasses.replace(
                kept, width=w, no_wrap=True, overflow="ellipsis" if cut else "crop"
            )
        shown.columns.append(kept)
    left_out = [_header_text(c) for c, w in zip(columns, widths, strict=True) if w is None]
    return shown, left_out


class FitTable(Table):
    """A table that fits the width it is rendered in (:func:`fitted`), in a listing, a
    describe or the live display alike; its rows and columns stay whole for CSV."""

    empty: str | None = None
    """What a listing says instead of a table without rows (``No experiments.``)."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        shown, _ = fitted(self, console, options)
        yield from Table.__rich_console__(shown, console, options)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        shown, _ = fitted(self, console, options)
        return Table.__rich_measure__(shown, console, options)


def fitting(table: Table) -> FitTable:
    """``table`` (its columns, rows and settings, shared) as a :class:`FitTable`."""
    if isinstance(table, FitTable):
        return table
    made: Any = FitTable.__new__(FitTable)
    made.__dict__.update(table.__dict__)
    return made  # type: ignore[no-any-return]
