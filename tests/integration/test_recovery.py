"""A master killed at any moment comes back with nothing lost; agents outlive it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from tests.integration.cluster import Cluster, wait_for

pytestmark = pytest.mark.integration


def random_config(trials: int, length: int, step_seconds: float, max_restarts: int = 0) -> str:
    return yaml.safe_dump(
        {
            "name": "recovery",
            "entrypoint": "python3 train.py",
            "hyperparameters": {
                "step_seconds": step_seconds,
                "checkpoint_every": 10,
                "x": {"type": "double", "minval": 1, "maxval": 2},
            },
            "searcher": {
                "name": "random",
                "metric": "loss",
                "max_trials": trials,
                "max_length": {"batches": length},
            },
            "max_restarts": max_restarts,
        }
    )


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_master_killed_mid_experiment_finishes_it_with_nothing_lost(
    tmp_path: Path, database: str, request: pytest.FixtureRequest
) -> None:
    db = request.getfixturevalue("pg_url") if database == "postgresql" else None
    cluster = Cluster(tmp_path / "home", db=db)
    cluster.start_master()
    cluster.start_agent("agent-1", slots=2)
    try:
        exp_id = cluster.submit(random_config(trials=4, length=150, step_seconds=0.02))
        wait_for(
            "two trials in progress",
            lambda: sum(t.steps_completed >= 20 for t in cluster.client.trials(exp_id)) >= 2,
        )
        cluster.kill_master()
        time.sleep(1.0)  # trials keep training and reporting into the void meanwhile
        cluster.start_master()
        exp = cluster.wait_state(exp_id, "COMPLETED", "ERROR", timeout=180)
        assert exp.state == "COMPLETED", cluster.log("master")
        trials = cluster.client.trials(exp_id)
        assert len(trials) == 4
        for trial in trials:
            assert trial.state == "COMPLETED", trial
            assert trial.restarts == 0, "the running trials were re-attached, not restarted"
            steps = [m.steps_completed for m in cluster.client.metrics(trial.id, "training")]
            assert steps == list(range(1, 151)), f"trial {trial['id']} lost or repeated reports"
            validations = cluster.client.metrics(trial.id, "validation")
            assert [v.steps_completed for v in validations] == [150]
    finally:
        cluster.stop()


def test_agent_lost_for_good_restarts_its_trials_elsewhere(tmp_path: Path) -> None:
    config = tmp_path / "master.yaml"
    config.write_text("agent_lost_after_seconds: 3\nagent_heartbeat_seconds: 1\n")
    cluster = Cluster(tmp_path / "home", master_config=config)
    cluster.start_master()
    cluster.start_agent("doomed", slots=1)
    try:
        exp_id = cluster.submit(
            random_config(trials=1, length=200, step_seconds=0.02, max_restarts=1)
        )
        trial_id = wait_for("the trial", lambda: cluster.client.trials(exp_id))[0].id
        wait_for("a checkpoint", lambda: cluster.client.trial(trial_id).latest_checkpoint)
        doomed = cluster.agents["doomed"]
        doomed.kill()
        doomed.wait()
        # Its trial process died with it; the master gives a lost agent's work up.
        cluster.start_agent("rescuer", slots=1)
        exp = cluster.wait_state(exp_id, "COMPLETED", "ERROR", timeout=120)
        trial = cluster.client.trial(trial_id)
        assert exp.state == "COMPLETED", trial
        assert trial.runs == 2
        assert "agent doomed was lost" in trial.message
    finally:
        cluster.stop()
