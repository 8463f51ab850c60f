"""Tables fit the terminal without splitting a cell: free text is shortened with "…", columns
of less interest are left out first, ids, names, states and numbers are never cut; into a pipe
every cell is whole."""

from __future__ import annotations

import re

import pytest
from rich.console import Console
from rich.table import Table

from assay import rest
from assay.cli._common import listing_table
from assay.cli._experiment_views import trial_table
from assay.cli._state import PIPE_WIDTH
from assay.cli._tables import MIN_CUT, Need, Rule, fitted, fitting, plan
from assay.protocol import TrialState

HPARAMS = {
    "learning_rate": 0.0123456,
    "hidden_size": 64,
    "batch_size": 32,
    "dropout": 0.125,
    "optimizer": {"name": "sgd", "momentum": 0.9},
}


def trial(trial_id: int, state: TrialState) -> rest.Trial:
    report = rest.Metric(
        trial_id=trial_id,
        steps_completed=1200,
        group="training",
        metrics={"loss": 0.123456789, "accuracy": 0.987654321},
        time=1.7e9,
        run=1,
        archived=False,
    )
    return rest.Trial(
        id=trial_id,
        experiment_id=1,
        request_id=f"r{trial_id}",
        state=state,
        hparams=HPARAMS,
        seed=1,
        restarts=0,
        runs=1,
        steps_completed=123456,
        latest_checkpoint="0123abcd-0000-4000-8000-000000000000",
        best_validation=0.0123456789,
        progress=0.5,
        early_stopped=False,
        early_exit=None,
        message="",
        created_at=1.7e9,
        started_at=1.7e9,
        ended_at=None,
        latest_training=report,
        latest_validation=None,
    )


TRIALS = [
    trial(101, TrialState.RUNNING),
    trial(102, TrialState.COMPLETED),
    trial(103, TrialState.STOPPING_COMPLETED),
]


def render(table: Table, width: int, *, terminal: bool = True) -> list[str]:
    console = Console(width=width, force_terminal=terminal, color_system=None, soft_wrap=False)
    with console.capture() as captured:
        console.print(table)
    return captured.get().rstrip("\n").split("\n")


def experiments_table() -> Table:
    """``e list``'s columns, with a long description as a listing of models has."""
    table = listing_table(
        "ID", "Name", "User", "State", "Created", "Description", "Archived", empty="none"
    )
    for i, state in enumerate(("RUNNING", "COMPLETED", "STOPPING_CANCELED")):
        table.add_row(
            str(1000 + i),
            f"digits-adaptive-search-{i}",
            "admin",
            state,
            "2026-11-29 12:34:56",
            "a long free-text description of what this experiment tries, " * 2,
            "",
        )
    return table


@pytest.mark.parametrize("width", [80, 100, 120])
def test_the_trial_table_keeps_each_row_on_one_line_at_any_width(width: int) -> None:
    lines = render(trial_table(TRIALS, "validation_loss"), width)
    assert len(lines) == 1 + len(TRIALS), "\n".join(lines)  # a header and a line a row
    assert all(len(line) <= width for line in lines)
    for line, t in zip(lines[1:], TRIALS, strict=True):
        # The id, the state and the numbers are whole, where the row is.
        assert line.split()[:3] == [str(t.id), t.state, "123456"], line
        assert "0.0123457" in line
    # The hyperparameters are shortened with an ellipsis, never folded onto a second line.
    assert all(line.rstrip().endswith("…") for line in lines[1:]), "\n".join(lines)


def test_a_narrow_terminal_leaves_out_columns_of_less_interest_first() -> None:
    header = render(trial_table(TRIALS, "validation_loss"), 80)[0].split("  ")
    shown = [h.strip() for h in header if h.strip()]
    assert shown[:4] == ["Trial", "State", "Steps", "Best validation_loss"]
    assert "Hyperparameters" in shown  # shortened, still there
    assert "Failures" not in shown
    wide = render(trial_table(TRIALS, "validation_loss"), 400)[0]
    assert "Failures" in wide and "Latest training" in wide


@pytest.mark.parametrize("width", [80, 100, 120])
def test_a_listing_cuts_its_description_and_never_a_name_a_state_or_a_time(width: int) -> None:
    lines = render(experiments_table(), width)
    assert len(lines) == 4, "\n".join(lines)
    described = "Description" in lines[0]
    assert described == (width > 80)  # at 80 columns it is left out, past that shortened
    for i, line in enumerate(lines[1:]):
        assert f"digits-adaptive-search-{i}" in line
        assert line.split()[3] in ("RUNNING", "COMPLETED", "STOPPING_CANCELED")
        assert "2026-11-29 12:34:56" in line
        assert ("a long free-text" in line and "…" in line) == described, line
    assert all(len(line) <= width for line in lines)


def test_piped_output_is_whole() -> None:
    for table in (trial_table(TRIALS, "validation_loss"), experiments_table()):
        lines = render(table, PIPE_WIDTH, terminal=False)
        assert "…" not in "\n".join(lines)
    lines = render(trial_table(TRIALS, "validation_loss"), PIPE_WIDTH, terminal=False)
    assert "optimizer.momentum=0.9" in lines[1] and "Failures" in lines[0]
    assert "accuracy=0.987654" in lines[1]


def test_a_plain_table_is_fitted_as_it_is_printed() -> None:
    table = Table(box=None)
    table.add_column("ID")
    table.add_column("Message")
    table.add_row("7", "words of a message " * 12)
    lines = render(table, 80)
    assert len(lines) > 2  # rich alone folds the cell onto more lines
    lines = render(fitting(table), 80)
    assert len(lines) == 2 and lines[1].rstrip().endswith("…")


def test_the_columns_left_out_are_named() -> None:
    console = Console(width=80, force_terminal=True, color_system=None)
    _, left_out = fitted(trial_table(TRIALS, "loss"), console, console.options)
    assert "Failures" in left_out and "Trial" not in left_out


def test_the_plan_shortens_before_it_leaves_out_and_keeps_the_first_column() -> None:
    key, extra = Need(10, 10, Rule(0)), Need(8, 8, Rule(9))
    text = Need(60, MIN_CUT, Rule(4, cut=True))
    # Room for all, the text shortened: nothing left out.
    assert plan([key, text, extra], [2, 2, 2], 40) == [10, 40 - 6 - 18, 8]
    # No room for the extra column even with the text at its least: it goes first.
    assert plan([key, text, extra], [2, 2, 2], 26) == [10, 12, None]
    # Less room than the first column needs: it stays whole (the terminal wraps the line).
    assert plan([key, text, extra], [2, 2, 2], 5)[0] == 10


def test_a_cut_never_lands_inside_a_number_of_an_unknown_column() -> None:
    table = listing_table("Steps", "loss", "accuracy", "val_loss", "val_accuracy", empty="-")
    table.add_row("100", "0.123456", "0.987654", "0.234567", "0.876543")
    lines = render(table, 30)
    numbers = re.findall(r"[0-9.]+", lines[1])
    assert all(n in ("100", "0.123456", "0.987654", "0.234567", "0.876543") for n in numbers)


@pytest.mark.parametrize(
    "cell",
    [
        "2026-11-29 08:23:33",
        ":rocket: launch",
        "[cyan]ACTIVE[/]",
        "a:b:c",
        "score :100: and :1234:",
        ":smile-emoji: :smile-text:",
        "lr=0.1, layers.n=2",
        "[bold]x[/] 12:30:45 :thumbs_up:",
    ],
)
def test_a_cell_is_read_once_as_rich_reads_it(cell: str) -> None:
    from rich.text import Text

    from assay.cli._tables import read_cell

    mine = read_cell(cell)
    assert isinstance(mine, Text)
    theirs = Text.from_markup(cell)
    assert (mine.plain, mine.spans) == (theirs.plain, theirs.spans)


def test_no_emoji_is_named_by_two_digits_so_a_time_needs_no_emoji_lookup() -> None:
    from rich._emoji_codes import EMOJI

    assert not [name for name in EMOJI if len(name) == 2 and name.isdigit()]
