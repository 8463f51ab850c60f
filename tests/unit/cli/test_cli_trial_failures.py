"""Trial tables count a trial's failures under that name: ``restarts`` includes the failure it
was not restarted after, so a column named "Restarts" read 1 for a trial that never ran again."""

from __future__ import annotations

from rich.console import Console

from assay.cli._experiment_views import trial_table
from assay.rest import Trial


def failed_trial(failures: int) -> Trial:
    return Trial(
        id=7,
        experiment_id=1,
        request_id="r",
        state="ERROR",
        hparams={"lr": 0.1},
        seed=1,
        restarts=failures,
        runs=failures,
        steps_completed=0,
        latest_checkpoint=None,
        best_validation=None,
        progress=0.0,
        early_stopped=False,
        early_exit=None,
        message=f"failed {failures} time",
        created_at=0.0,
        started_at=0.5,
        ended_at=1.0,
    )


def test_trial_table_names_the_column_failures() -> None:
    console = Console(width=160, record=True)
    console.print(trial_table([failed_trial(1)], "loss"))
    text = console.export_text()
    header = text.splitlines()[0]
    assert "Failures" in header and "Restarts" not in header
    row = text.splitlines()[1].split()
    assert row[:2] == ["7", "ERROR"] and "1" in row


def test_runs_lost_with_their_agent_are_counted_apart_from_failures() -> None:
    from rich.text import Text

    from assay.cli._trial import heading

    lost_twice = failed_trial(0).model_copy(update={"state": "RUNNING", "infra_restarts": 2})
    console = Console(width=200, record=True)
    console.print(trial_table([lost_twice], "loss"))
    header, row = console.export_text().splitlines()[:2]
    columns = [c.strip() for c in header.split("  ") if c.strip()]
    assert columns.index("Agent losses") == columns.index("Failures") + 1
    cells = row.split()
    assert any(cells[i : i + 2] == ["0", "2"] for i in range(len(cells))), row
    assert "failures 0  agent losses 2  best -" in Text.from_markup(heading(lost_twice)).plain
    assert "agent losses" not in Text.from_markup(heading(failed_trial(1))).plain
