"""The live display of ``e create -f`` in a terminal (tmux) of 80, 100 and 120 columns keeps
each trial on one line: numbers, ids and states whole, the hyperparameters shortened with "…"
(they were folded onto more lines, a number split across two at 100 columns)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.integration.cluster import CONTEXTS, ROOT, Cluster, wait_for
from tests.integration.test_cli_follow import CLI, Tmux, tmux_or_skip

pytestmark = pytest.mark.integration

ROW = re.compile(r"^\s*\d+\s+(QUEUED|RUNNING|COMPLETED|STOPPING_\w+)\s+\d+(\s|$)")


def table_of(screen: str) -> list[str] | None:
    """The live table's lines (its header and a line per trial shown), or None while it has
    no running trial to show."""
    lines = screen.splitlines()
    starts = [i for i, line in enumerate(lines) if line.lstrip().startswith("Trial ")]
    if not starts:
        return None
    rows = []
    for line in lines[starts[-1] + 1 :]:
        if not line.strip() or line.startswith("experiment ") or line.startswith("waiting"):
            break
        rows.append(line)
    if not any(" RUNNING " in row for row in rows):
        return None
    return [lines[starts[-1]], *rows]


def test_the_live_table_keeps_each_trial_on_one_line_at_80_100_and_120_columns(
    cluster: Cluster, tmp_path: Path
) -> None:
    tmux_or_skip()
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "name": "live-widths",
                "entrypoint": "python3 train.py",
                "hyperparameters": {
                    "step_seconds": 0.1,
                    "checkpoint_every": 10,
                    "a_rather_long_hyperparameter_name": {
                        "type": "double",
                        "minval": 1000,
                        "maxval": 2000,
                    },
                    "another_long_one": {"type": "categorical", "vals": ["a-long-choice"]},
                },
                "searcher": {
                    "name": "random",
                    "metric": "loss",
                    "max_trials": 4,
                    "max_length": {"batches": 150},
                },
            }
        )
    )
    env = {k: v for k, v in cluster.env.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    command = " ".join(
        f"'{part}'" for part in [*CLI, "e", "create", str(config), str(CONTEXTS / "counter"), "-f"]
    )
    tmux = Tmux(tmp_path, env)
    tmux.run(
        "new-session", "-d", "-s", "follow", "-x", "80", "-y", "40",
        f"cd '{ROOT}' && {command}; echo \"exit status $?\"; sleep 600",
    )  # fmt: skip
    seen: dict[int, list[str]] = {}
    try:
        narrower = 0
        for width in (80, 100, 120):
            tmux.run("resize-window", "-t", "follow", "-x", str(width), "-y", "40")
            # The view redrawn at this width (until then the screen shows the last one): a
            # wider terminal shows more of each trial, so its header is longer.
            seen[width] = wait_for(
                f"the live table at {width} columns",
                lambda shorter=narrower: (
                    (t := table_of(tmux.screen())) and len(t[0]) > shorter and t
                ),
                timeout=60,
                interval=0.2,
            )
            narrower = len(seen[width][0])
    finally:
        subprocess.run(["tmux", "-S", tmux.socket, "kill-server"], check=False, timeout=30)
    for width, table in seen.items():
        shown = "\n".join(table)
        assert all(len(line) <= width for line in table), shown
        for row in table[1:]:
            # A trial a line: its id, state and steps whole; the hyperparameters end in "…".
            assert ROW.match(row), f"at {width} columns:\n{shown}"
            assert row.rstrip().endswith("…"), f"at {width} columns:\n{shown}"
