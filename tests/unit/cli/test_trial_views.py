"""What ``assay trial describe`` and ``trial logs`` show of a trial that has not run."""

from __future__ import annotations

from rich.text import Text

from assay.cli._trial import heading, no_output_note
from tests.unit.cli.test_follow_lines import trial


def test_trial_describe_shows_a_dash_for_a_best_not_yet_known() -> None:
    line = Text.from_markup(heading(trial("QUEUED"))).plain
    assert line.endswith("failures 0  best -"), line


def test_trial_logs_of_a_trial_that_never_ran_has_a_note() -> None:
    assert no_output_note(trial("QUEUED")) == "trial 7 is QUEUED; it has no output yet"
    assert no_output_note(trial("ERROR")) == "trial 7 is ERROR and never ran; it has no output"
    ran = trial("RUNNING").model_copy(update={"runs": 1})
    assert no_output_note(ran) is None


def test_the_trial_table_marks_a_latest_checkpoint_that_was_deleted() -> None:
    from rich.console import Console

    from assay.cli._experiment_views import trial_table

    kept = trial("COMPLETED").model_copy(update={"latest_checkpoint": "08e18012-aaaa"})
    gone = trial("COMPLETED").model_copy(update={"id": 8, "latest_checkpoint": "5c1e0d2f-bbbb"})
    out = Console(width=300, record=True)
    out.print(trial_table([kept, gone], "loss", {"5c1e0d2f-bbbb"}))
    lines = out.export_text().splitlines()
    assert "08e18012 " in lines[1] and "(deleted)" not in lines[1]
    assert "5c1e0d2f (deleted)" in lines[2]
