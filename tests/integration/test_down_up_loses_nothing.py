"""``assay down`` then ``assay up`` loses no work: running trials checkpoint and exit (or are
killed after the grace), wait without a restart counted, and resume from their checkpoint; and
``assay up`` reports only what it started: a taken port is named before anything starts, two
``up``s in one home start one master, and each attempt has a log of its own."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from assay.client import Client
from assay.errors import InvalidRequest
from tests.integration.cluster import CONTEXTS, free_port, wait_for
from tests.integration.test_up_signs_in import Assay, private_assay, private_env

pytestmark = pytest.mark.integration

LENGTH = 120


def _config() -> str:
    return yaml.safe_dump(
        {
            "name": "down-up",
            "entrypoint": "python3 train.py",
            "hyperparameters": {
                "step_seconds": 0.05,
                "checkpoint_every": 10,
                "x": {"type": "double", "minval": 1, "maxval": 2},
            },
            "searcher": {
                "name": "random",
                "metric": "loss",
                "max_trials": 2,
                "max_length": {"batches": LENGTH},
            },
            "max_restarts": 0,
        }
    )


def _trial(assay: Assay, trial_id: int) -> dict[str, Any]:
    answer = assay("trial", "describe", str(trial_id), "--json")
    assert answer.returncode == 0, answer.stderr
    trial: dict[str, Any] = json.loads(answer.stdout)
    return trial


def _client(tmp_path: Path, port: str) -> Client:
    """A client signed in as the cluster's admin, for polling faster than the command can."""
    client = Client(f"http://127.0.0.1:{port}", timeout=10)
    password = (tmp_path / "home" / "admin-password").read_text().strip()
    return Client(client.url, token=client.login("admin", password).token, timeout=10)


def _all_past(client: Client, step: int) -> bool:
    trials = client.trials(1)
    return len(trials) == 2 and all(
        t.state == "RUNNING" and t.steps_completed >= step for t in trials
    )


def test_down_and_up_twice_mid_experiment_resumes_every_trial_from_its_checkpoint(
    tmp_path: Path,
) -> None:
    port = str(free_port())
    assay = private_assay(tmp_path)
    config = tmp_path / "exp.yaml"
    config.write_text(_config())
    try:
        assert assay("up", "--port", port, "--slots", "2").returncode == 0
        created = assay("experiment", "create", str(config), str(CONTEXTS / "counter"))
        assert created.returncode == 0, created.stderr
        client = _client(tmp_path, port)
        for wait in (-1, 61, "soon"):  # refused before anything is stopped
            with pytest.raises(InvalidRequest, match="wait_seconds"):
                client.http.post("/api/v1/master/drain", {"wait_seconds": wait})
        wait_for("both trials training", lambda: _all_past(client, 15))

        # With the default grace, each trial checkpoints where it is and exits.
        down = assay("down")
        assert down.returncode == 0, down.stderr
        assert "2 trial(s) checkpointed and exited" in down.stdout, down.stdout
        assert "killed" not in down.stdout

        assert assay("up", "--port", port).returncode == 0
        client = _client(tmp_path, port)
        resumed = max(t.steps_completed for t in client.trials(1))
        wait_for("both trials training again", lambda: _all_past(client, resumed + 5))

        # No grace: what has not exited at once is killed with its agent, and still is not a
        # failure; it resumes from its last periodic checkpoint.
        assert assay("down", "--grace", "0").returncode == 0
        assert assay("up", "--port", port).returncode == 0
        # One sign-in: a new one each poll met the master's sign-in rate limit, and the wait
        # went on for its minute.
        client = _client(tmp_path, port)
        wait_for(
            "the experiment to complete",
            lambda: client.experiment(1).state == "COMPLETED",
            timeout=90,
        )
        for trial_id in (1, 2):
            trial = _trial(assay, trial_id)
            assert trial["state"] == "COMPLETED", trial
            assert trial["restarts"] == 0, trial
            assert trial["steps_completed"] == LENGTH
            assert trial["runs"] == 3, trial
            stops = [a["preempt"] for a in trial["allocations"]]
            assert stops == ["cluster_stop", "cluster_stop", None], trial["allocations"]
            logs = assay("trial", "logs", str(trial_id)).stdout
            starts = [int(s) for s in re.findall(r"started at step (\d+) run", logs)]
            preempted = [int(s) for s in re.findall(r"preempted at step (\d+)", logs)]
            assert len(starts) == 3 and starts[0] == 0, logs
            # The first stop was clean: the second run began exactly where the first stopped.
            assert preempted and starts[1] == preempted[0] > 0, logs
            # The second may have been a kill: from its last checkpoint, never from the start.
            assert starts[2] >= starts[1], logs
            if len(preempted) == 2:
                assert starts[2] == preempted[1], logs
            assert f"done at step {LENGTH}" in logs
    finally:
        assay("down", "--grace", "0")


def test_up_on_a_taken_port_exits_1_naming_it_and_starts_nothing(tmp_path: Path) -> None:
    assay = private_assay(tmp_path)
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        up = assay("up", "--port", str(port), "--slots", "1")
    assert up.returncode == 1
    lines = up.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert f"port {port} on 127.0.0.1 is in use by pid " in lines[0], lines
    assert "--port" in lines[0]
    run = tmp_path / "home" / "run"
    assert not (run / "master.pid").exists() and not (run / "agent.pid").exists()
    assert "already up" not in up.stdout and "cluster up" not in up.stdout


def test_two_ups_at_once_in_one_home_start_one_cluster(tmp_path: Path) -> None:
    port = str(free_port())
    assay = private_assay(tmp_path)
    home = tmp_path / "home"
    command = [sys.executable, "-c", "from assay.cli import main; main()", "up"]
    both = [
        subprocess.Popen(
            [*command, "--port", port, "--slots", "1"],
            env=private_env(tmp_path),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    try:
        outputs = [p.communicate(timeout=120) for p in both]
        assert [p.returncode for p in both] == [0, 0], outputs
        said = sorted(out for out, _ in outputs)
        assert said[0].startswith("cluster already up at "), said
        assert said[1].startswith("cluster up: master "), said
        masters = list((home / "logs").glob("master-*.log"))
        assert len(masters) == 1, masters
    finally:
        assay("down")


def test_each_failed_up_has_a_log_of_its_own(tmp_path: Path) -> None:
    assay = private_assay(tmp_path)
    logs = tmp_path / "home" / "logs"
    bad = f"sqlite:///{tmp_path / 'missing' / 'assay.db'}"
    first = assay("up", "--port", str(free_port()), "--db", bad)
    assert first.returncode == 1 and "the master exited" in first.stderr
    first_log = (logs / "master.log").resolve()
    second = assay("up", "--port", str(free_port()), "--db", bad)
    assert second.returncode == 1
    latest = (logs / "master.log").resolve()
    assert latest != first_log and len(list(logs.glob("master-*.log"))) == 2
    # The latest attempt's log holds its own error only.
    assert latest.read_text().count("unable to open database file") == (
        first_log.read_text().count("unable to open database file")
    )
