"""``--csv`` (one writer for every listing), ``--json`` with ``--csv`` refused before anything is
asked of a master, and the ``--head``/``--tail``/``--timestamps`` helpers of the logs commands."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Any

import pytest
from click.testing import CliRunner
from rich.table import Table

from assay.cli._app import command
from assay.cli._common import esc, listing_table, print_table, styled_state, whole_cells
from assay.cli._logview import stamp, stored_lines, window

runner = CliRunner()


def invoke(args: list[str], **extra: Any) -> Any:
    """``assay ARGS`` in this process, as the ``assay`` script runs it."""
    return runner.invoke(command(), args, prog_name="assay", **extra)


LISTINGS = [
    ["e", "list"],
    ["e", "list-trials", "1"],
    ["e", "list-checkpoints", "1"],
    ["job", "list"],
    ["task", "list"],
    ["agent", "list"],
    ["slot", "list"],
    ["resource-pool", "list"],
    ["user", "list"],
    ["token", "list"],
    ["t", "describe", "1", "--metrics"],
]


@pytest.mark.parametrize("args", LISTINGS, ids=" ".join)
def test_json_and_csv_together_are_refused_in_one_line(args: list[str]) -> None:
    # No master is reachable here: the refusal comes before any request.
    done = invoke(["-m", "http://127.0.0.1:9", *args, "--json", "--csv"])
    assert done.exit_code == 1
    assert "--json and --csv are two output formats; pick one" in done.output
    assert done.output.count("\n") == 1


def test_csv_has_the_table_columns_without_markup_and_nothing_cut(
    capsys: pytest.CaptureFixture[str],
) -> None:
    table = Table()
    for col in ("ID", "Name", "State"):
        table.add_column(col)
    long = "x" * 500
    table.add_row("1", esc("[not markup], with a comma"), styled_state("COMPLETED"))
    table.add_row("2", esc(long), styled_state("STOPPING_KILLED"))
    print_table(table, as_csv=True)
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert rows == [
        ["ID", "Name", "State"],
        ["1", "[not markup], with a comma", "COMPLETED"],
        ["2", long, "STOPPING_KILLED"],
    ]


def test_a_timestamp_is_iso_utc_to_the_millisecond() -> None:
    assert stamp(0.25) == "1970-01-01T00:00:00.250Z "


@dataclass
class _Line:
    id: int
    time: float


def test_stored_lines_page_through_and_keep_the_head_or_the_tail() -> None:
    lines = [_Line(i, float(i)) for i in range(1, 8)]

    def fetch(after: int) -> list[_Line]:
        return [x for x in lines if x.id > after][:3]

    assert stored_lines(fetch, 3) == (lines, 7)
    assert stored_lines(fetch, 3, tail=2) == (lines[-2:], 7)
    assert stored_lines(fetch, 3, tail=0) == ([], 7)
    got, _ = stored_lines(fetch, 3, head=4)
    assert got == lines[:4]
    assert window(range(5), None, 2) == [3, 4]
    assert window(range(5), 2, None) == [0, 1]
    assert window(range(5), None, None) == [0, 1, 2, 3, 4]


def test_a_cell_too_long_for_a_narrow_terminal_folds_instead_of_ending_in_an_ellipsis() -> None:
    from rich.console import Console

    uuid = "0b5e5b6c-9d5b-4f5e-8a77-2b1f0b0f7a10"
    table = listing_table("UUID", "State", empty="No checkpoints.")
    table.add_row(uuid, "COMPLETED")
    narrow = Console(width=30, record=True, file=io.StringIO())
    narrow.print(whole_cells(table))
    lines = narrow.export_text().splitlines()[1:]
    assert "…" not in "".join(lines)
    assert "".join(line.split()[0] for line in lines if line.strip()) == uuid
