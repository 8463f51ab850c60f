"""What ``assay`` prints into a pipe, as a script or ``| grep`` reads it: log lines exactly as the
trial wrote them, tables whole, and ``--json`` with ``--follow`` as JSON lines."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.integration.cluster import Cluster

pytestmark = pytest.mark.integration

LONG_LINE = "step 1\tloss=" + "0123456789" * 30
LONG_NAME = "digits-random-search-with-a-name-longer-than-any-terminal-is-wide-" + "x" * 80


def _printing_context(tmp_path: Path) -> Path:
    context = tmp_path / "printer"
    context.mkdir()
    (context / "train.py").write_text(f"print({LONG_LINE!r})\n")
    return context


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(
        textwrap.dedent(
            f"""
            name: {LONG_NAME}
            entrypoint: python3 train.py
            searcher: {{name: single, metric: loss, max_length: {{batches: 1}}}}
            max_restarts: 0
            """
        )
    )
    return path


def test_piped_logs_keep_a_long_line_byte_for_byte_and_tables_keep_long_names(
    cluster: Cluster, tmp_path: Path
) -> None:
    created = cluster.cli(
        "e", "create", str(_config(tmp_path)), str(_printing_context(tmp_path)), "--json"
    )
    exp_id = json.loads(created.stdout)["id"]
    cluster.wait_state(exp_id, "COMPLETED", "ERROR", "CANCELED")
    trial_id = cluster.client.trials(exp_id)[0].id

    logs = cluster.cli("trial", "logs", str(trial_id), check=True).stdout
    assert LONG_LINE in logs.splitlines(), logs
    in_experiment = cluster.cli("e", "logs", str(exp_id), check=True).stdout
    assert f"[trial {trial_id}] {LONG_LINE}" in in_experiment.splitlines(), in_experiment
    as_json = cluster.cli("trial", "logs", str(trial_id), "--json", check=True).stdout
    entries = [json.loads(line) for line in as_json.splitlines()]
    assert LONG_LINE in [e["line"] for e in entries]

    listing = cluster.cli("e", "list", check=True).stdout
    assert LONG_NAME in listing and "…" not in listing, listing
    assert "\x1b[" not in listing, "no colours into a pipe"


def test_create_follow_json_streams_one_json_object_per_line_to_the_end(
    cluster: Cluster, tmp_path: Path
) -> None:
    result = cluster.cli(
        "e", "create", str(_config(tmp_path)), str(_printing_context(tmp_path)), "-f", "--json"
    )
    lines = result.stdout.splitlines()
    states = [json.loads(line)["state"] for line in lines]  # every line is a JSON object
    assert len(lines) >= 2, result.stdout
    assert states[-1] in ("COMPLETED", "ERROR")
    assert result.returncode == (0 if states[-1] == "COMPLETED" else 1), result.stderr
    assert "created experiment" not in result.stdout, "no text view mixed into the JSON"


def test_task_create_follow_json_streams_the_task_its_log_lines_and_how_it_ended(
    cluster: Cluster, tmp_path: Path
) -> None:
    config = tmp_path / "task.yaml"
    config.write_text("entrypoint: python3 train.py\nresources:\n  slots: 0\n")
    result = cluster.cli(
        "task", "create", str(config), str(_printing_context(tmp_path)), "-f", "--json"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    objects = [json.loads(line) for line in result.stdout.splitlines()]
    assert objects[0]["id"] == objects[-1]["id"] and objects[-1]["state"] == "SUCCEEDED"
    assert LONG_LINE in [o.get("line") for o in objects[1:-1]]
