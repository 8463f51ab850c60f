"""What the CLI prints into a pipe or a file is never wrapped or cut: people grep it."""

from __future__ import annotations

import subprocess
import sys

LONG = "loss=" + "9" * 300

PRINTS = f"""
from rich.table import Table
from assay.cli._common import console
from assay.cli._experiment_views import trial_table
from assay.rest import Trial
console.print({LONG!r}, highlight=False, markup=False)
table = Table("name", "value")
table.add_row("digits-random-search-with-a-long-name", {LONG!r})
console.print(table)
trial = Trial(
    id=1, experiment_id=1, request_id="r", state="RUNNING", hparams={{"learning_rate": {LONG!r}}},
    seed=1, restarts=0, runs=1, steps_completed=5, latest_checkpoint=None, best_validation=None,
    progress=0.0, early_stopped=False, early_exit=None, message="", created_at=0.0,
    started_at=None,
    ended_at=None,
)
console.print(trial_table([trial], "loss"))
"""


def test_lines_tables_and_hyperparameters_reach_a_pipe_whole() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PRINTS], capture_output=True, text=True, check=True
    ).stdout
    lines = out.splitlines()
    assert lines[0] == LONG, "a log line is printed as it is"
    assert sum(LONG in line for line in lines) == 3, out
    assert any("digits-random-search-with-a-long-name" in line for line in lines), out
    assert "…" not in out, "nothing is cut"


def test_a_log_line_reaches_a_pipe_byte_for_byte_tabs_and_carriage_returns_included() -> None:
    line = "epoch 1\tloss=0.5\r\x1b[31mred\x1b[0m [bold]x[/] " + "7" * 300
    code = f"from assay.cli._common import print_log_line\nprint_log_line({line!r}, '[trial 1] ')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True).stdout
    assert out == f"[trial 1] {line}\n".encode()


def test_an_error_reaches_a_piped_stderr_on_one_line_urls_whole() -> None:
    url = "http://127.0.0.1:35493/bucket/.assay-manifests/" + "0" * 64 + ".json"
    message = f"could not delete checkpoint ck from storage (not reachable: {url}); it is kept"
    code = f"from assay.cli._common import err_console\nerr_console.print({message!r})"
    err = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    ).stderr
    assert err == message + "\n"
