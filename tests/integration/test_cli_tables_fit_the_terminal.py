"""Every listing, printed in a real terminal (a pseudo-terminal of 80, 100 and 120 columns),
keeps each row on one line: long free text ends in "…", columns of less interest are left out,
and ids, names, states, times and UUIDs are never cut. Piped, the same listings are whole. An
empty listing says so in a line on stderr, not with a bare header."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
import yaml

from tests.integration.cluster import CONTEXTS, ROOT, Cluster

pytestmark = pytest.mark.integration

CLI = [sys.executable, "-c", "from assay.cli import main; main()"]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
NAME = "a-long-experiment-name-of-digits"
HPARAMS = {
    "step_seconds": 0.01,
    "checkpoint_every": 5,
    "a_rather_long_hyperparameter_name": {"type": "double", "minval": 1000, "maxval": 2000},
    "another_long_hyperparameter_name": {"type": "categorical", "vals": ["some-long-choice"]},
}


def in_terminal(env: dict[str, str], width: int, *args: str) -> list[str]:
    """The lines ``assay ARGS`` shows in a terminal ``width`` columns wide (stdout and stderr,
    as a person sees them)."""
    parent, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 50, width, 0, 0))
    proc = subprocess.Popen(
        [*CLI, *args], stdin=child, stdout=child, stderr=child, env=env, cwd=ROOT
    )
    os.close(child)
    out = b""
    with contextlib.suppress(OSError):  # EIO: the terminal's last writer closed it
        while chunk := os.read(parent, 65536):
            out += chunk
    os.close(parent)
    assert proc.wait(timeout=60) == 0, out.decode(errors="replace")
    text = ANSI.sub("", out.decode()).replace("\r\n", "\n")
    return [line.rstrip() for line in text.rstrip("\n").split("\n")]


@pytest.fixture
def populated(cluster: Cluster, tmp_path: Path) -> Cluster:
    config = tmp_path / "exp.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "name": NAME,
                "description": "what this search tries, told at length: " * 4,
                "entrypoint": "python3 train.py",
                "hyperparameters": HPARAMS,
                "searcher": {
                    "name": "random",
                    "metric": "loss",
                    "max_trials": 3,
                    "max_length": {"batches": 10},
                },
            }
        )
    )
    cluster.cli("e", "create", str(config), str(CONTEXTS / "counter"), "-f", check=True)
    return cluster


def holds(line: str, value: str) -> bool:
    return re.search(rf"(^|\s){re.escape(value)}(\s|$)", line) is not None


def terminal_env(cluster: Cluster) -> dict[str, str]:
    env = {k: v for k, v in cluster.env.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    return {**env, "TERM": "xterm-256color"}


def test_listings_keep_each_row_on_one_line_at_80_100_and_120_columns(
    populated: Cluster,
) -> None:
    cluster = populated
    env = terminal_env(cluster)
    trials = cluster.client.trials(1)
    checkpoints = [c for c in cluster.client.experiment_checkpoints(1) if c.state != "DELETED"]
    whole = {
        # each command: the values each of its rows holds whole, row by row
        ("e", "list"): [["1", NAME, "COMPLETED"]],
        ("e", "list-trials", "1"): [[str(t.id), "COMPLETED", "10"] for t in trials],
        ("e", "list-checkpoints", "1"): [[c.uuid, str(c.trial_id)] for c in checkpoints],
        ("agent", "list"): [["agent-1", "default"]],
        ("slot", "list"): [["agent-1", "default"]] * 2,
        ("user", "list"): [["admin"]],
        ("nni", "trial", "ls", "1"): [[str(t.id), "SUCCEEDED"] for t in trials],
        ("nni", "experiment", "list", "--all"): [["1", NAME, "DONE"]],
    }
    for width in (80, 100, 120):
        for command, rows in whole.items():
            lines = in_terminal(env, width, *command)
            shown = "\n".join(lines)
            table, note = lines[: 1 + len(rows)], lines[1 + len(rows) :]
            # What follows the table is at most the note naming the columns left out.
            assert not note or note[0].startswith("(left out at this width: "), shown
            assert all(len(line) <= width for line in lines), shown
            for values in rows:  # some row holds them all, each whole
                assert any(all(holds(line, v) for v in values) for line in table[1:]), (
                    values,
                    shown,
                )
        trial_lines = in_terminal(env, width, "e", "list-trials", "1")
        # The hyperparameters are shortened at the end of the row, never folded.
        rows_shown = trial_lines[1 : 1 + len(trials)]
        assert all(line.endswith("…") for line in rows_shown), "\n".join(trial_lines)
        if width > 80:  # at 80 columns the time is left out, never cut
            created = in_terminal(env, width, "e", "list")[1]
            assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", created), created

    # Piped, nothing is cut or left out.
    piped = cluster.cli("e", "list-trials", "1", check=True).stdout
    assert "…" not in piped and "Failures" in piped
    assert "another_long_hyperparameter_name=some-long-choice" in piped
    described = cluster.cli("e", "list", check=True).stdout
    assert "Archived" in described and "…" not in described
    # NNI's listings too: plain columns, no box drawn around them.
    for command in (("nni", "trial", "ls", "1"), ("nni", "experiment", "list", "--all")):
        plain = cluster.cli(*command, check=True).stdout
        assert not set("┏┃━│┗┡┳╇") & set(plain), plain
        assert plain.split()[0] in ("trialJobId", "id"), plain


def test_an_empty_listing_says_so_on_stderr_and_csv_and_json_stay_data(
    cluster: Cluster,
) -> None:
    env = terminal_env(cluster)
    assert in_terminal(env, 80, "e", "list") == ["No experiments."]
    assert in_terminal(env, 80, "model", "list") == ["No models."]
    piped = cluster.cli("e", "list", check=True)
    assert (piped.stdout, piped.stderr) == ("", "No experiments.\n")
    csv = cluster.cli("e", "list", "--csv", check=True)
    assert csv.stdout == "ID,Name,User,State,Progress,Trials,Searcher,Created,Archived\n"
    assert json.loads(cluster.cli("e", "list", "--json", check=True).stdout)["experiments"] == []
    for command, said in (
        (("tensorboard", "list"), "No TensorBoards."),
        (("task", "list"), "No tasks."),
        (("token", "list"), "No tokens."),
        (("job", "list"), "No jobs."),
    ):
        done = cluster.cli(*command, check=True)
        assert (done.stdout, done.stderr) == ("", said + "\n"), command
