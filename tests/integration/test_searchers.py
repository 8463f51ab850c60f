"""The searchers of a real cluster: ASHA (promotions and stopping), PBT, custom, invalid
hyperparameters, and a master killed in the middle of an ASHA search."""

from __future__ import annotations

import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from assay import rest
from tests.integration.cluster import CONTEXTS, Cluster, wait_for

pytestmark = pytest.mark.integration


# Promotion-mode ASHA with rungs at 10, 20 and 40 batches.
ASHA_EIGHT_TRIALS: dict[str, Any] = {
    "name": "adaptive_asha",
    "max_trials": 8,
    "max_length": {"batches": 40},
    "divisor": 2,
    "max_rungs": 3,
    "mode": "aggressive",
}


def config(searcher: dict[str, Any], **hparams: Any) -> str:
    return yaml.safe_dump(
        {
            "name": f"{searcher['name']}-test",
            "entrypoint": "python3 train.py",
            "hyperparameters": {
                "step_seconds": 0.005,
                "checkpoint_every": 5,
                "x": {"type": "double", "minval": 1, "maxval": 10},
                **hparams,
            },
            "searcher": {"metric": "loss", **searcher},
            "max_restarts": 0,
        }
    )


def validations(cluster: Cluster, trial_id: int) -> list[int]:
    return [m.steps_completed for m in cluster.client.metrics(trial_id, "validation")]


def assert_asha_ran_each_length_once(cluster: Cluster, exp_id: int, max_trials: int) -> None:
    trials = cluster.client.trials(exp_id)
    assert len(trials) == max_trials
    assert all(t.state == "COMPLETED" for t in trials), trials
    for trial in trials:
        lengths = validations(cluster, trial.id)
        repeated = [length for length, n in Counter(lengths).items() if n > 1]
        assert not repeated, f"trial {trial['id']} validated twice at {repeated}"
        assert lengths == sorted(lengths)


def test_asha_promotes_the_best_trials_to_longer_lengths(cluster: Cluster) -> None:
    searcher = ASHA_EIGHT_TRIALS
    exp_id = cluster.submit(config(searcher))
    exp = cluster.wait_state(exp_id, "COMPLETED", "ERROR", timeout=240)
    assert exp.state == "COMPLETED", exp
    assert_asha_ran_each_length_once(cluster, exp_id, 8)
    trials = cluster.client.trials(exp_id)
    reached = Counter(t.steps_completed for t in trials)
    assert set(reached) <= {10, 20, 40}, reached
    assert reached[40] >= 1 and reached[10] >= 1
    stopped = [t for t in trials if t.steps_completed < 40]
    assert stopped and all(t.early_stopped for t in stopped)
    assert not any(t.early_stopped for t in trials if t.steps_completed == 40)
    promoted = [t for t in trials if t.steps_completed > 10]
    for trial in promoted:
        starts = [ln for ln in cluster.trial_logs(trial.id) if ln.startswith("started at step")]
        # A promoted trial continues from its checkpoint, never from zero.
        assert all(not s.startswith("started at step 0") for s in starts[1:]), starts
    best = min(trials, key=lambda t: t.best_validation)
    assert best.steps_completed == 40


def test_code_driven_asha_stops_trials_that_fall_behind(cluster: Cluster) -> None:
    searcher = {
        "name": "adaptive_asha",
        "max_trials": 6,
        "time_metric": "batches",
        "max_time": 40,
        "divisor": 2,
        "max_rungs": 3,
        "mode": "aggressive",
    }
    # Steps of 20 ms: a stop decided at the first rung (10) reaches the trial well before it
    # trains to 40 on its own, even on a loaded machine.
    exp_id = cluster.submit(config(searcher, code_driven_steps=40, step_seconds=0.02))
    exp = cluster.wait_state(exp_id, "COMPLETED", "ERROR", timeout=240)
    assert exp.state == "COMPLETED", exp
    trials = cluster.client.trials(exp_id)
    assert len(trials) == 6
    assert all(t.state == "COMPLETED" for t in trials), "stopped trials are not errors"
    stopped = [t for t in trials if t.early_stopped]
    assert stopped, "ASHA stopped nobody"
    for trial in stopped:
        assert trial.steps_completed < 40
        assert any("preempted at step" in ln for ln in cluster.trial_logs(trial.id))


@pytest.mark.parametrize("invalid_by", ["report", "raise"])
def test_invalid_hyperparameters_are_replaced_and_do_not_count(
    cluster: Cluster, invalid_by: str
) -> None:
    searcher = {"name": "random", "max_trials": 4, "max_length": {"batches": 10}}
    submitted = yaml.safe_load(config(searcher, invalid_above=5.5, invalid_by=invalid_by))
    # A fixed seed whose first draws include invalid points, so both kinds are always seen.
    submitted["reproducibility"] = {"experiment_seed": 3}
    exp_id = cluster.submit(yaml.safe_dump(submitted))
    exp = cluster.wait_state(exp_id, "COMPLETED", "ERROR", timeout=180)
    assert exp.state == "COMPLETED"
    trials = cluster.client.trials(exp_id)
    valid = [t for t in trials if t.early_exit is None]
    invalid = [t for t in trials if t.early_exit == "invalid_hp"]
    assert len(valid) == 4 and all(t.steps_completed == 10 for t in valid)
    assert all(t.hparams["x"] <= 5.5 for t in valid)
    assert invalid and all(t.hparams["x"] > 5.5 for t in invalid)
    if invalid_by == "raise":
        for trial in invalid:
            logs = "\n".join(cluster.trial_logs(trial.id))
            assert "invalid hyperparameters: x = " in logs
            assert "Traceback" not in logs, "InvalidHP ends the trial cleanly"


def test_pbt_copies_good_trials_from_their_checkpoints(cluster: Cluster) -> None:
    searcher = {
        "name": "pbt",
        "population_size": 4,
        "num_rounds": 3,
        "length_per_round": {"batches": 10},
        "replace_function": {"truncate_fraction": 0.25},
        "explore_function": {"resample_probability": 0.2, "perturb_factor": 0.2},
    }
    exp_id = cluster.submit(config(searcher))
    exp = cluster.wait_state(exp_id, "COMPLETED", "ERROR", timeout=240)
    assert exp.state == "COMPLETED", exp
    trials = cluster.client.trials(exp_id)
    children = [t for t in trials if _first_start(cluster, t) > 0]
    assert children, "no trial started from a parent's checkpoint"
    for child in children:
        assert _first_start(cluster, child) % 10 == 0


def _first_start(cluster: Cluster, trial: rest.Trial) -> int:
    starts = [ln for ln in cluster.trial_logs(trial.id) if ln.startswith("started at step")]
    return int(starts[0].split()[3]) if starts else -1


def test_custom_searcher_runs_and_a_broken_one_fails_only_its_experiment(
    cluster: Cluster, tmp_path: Path
) -> None:
    context = tmp_path / "context"
    shutil.copytree(CONTEXTS / "counter", context)
    shutil.copy(CONTEXTS / "custom" / "my_searcher.py", context)
    good = config({"name": "custom", "class": "my_searcher:TwoTrials"})
    exp_id = cluster.submit(good, context=context)
    exp = cluster.wait_state(exp_id, "COMPLETED", "ERROR", timeout=120)
    assert exp.state == "COMPLETED", exp
    trials = cluster.client.trials(exp_id)
    assert [t.steps_completed for t in trials] == [20, 20]

    bad = config({"name": "custom", "class": "my_searcher:Broken"})
    bad_id = cluster.submit(bad, context=context)
    failed = cluster.wait_state(bad_id, "ERROR", timeout=60)
    assert "this searcher is broken on purpose" in failed.message
    assert "Traceback" in failed.message
    assert cluster.client.info().cluster_id, "the master lives on"


def test_master_killed_during_asha_finishes_with_exactly_max_trials(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path / "home")
    cluster.start_master()
    cluster.start_agent("agent-1", slots=2)
    searcher = ASHA_EIGHT_TRIALS
    try:
        exp_id = cluster.submit(config(searcher, step_seconds=0.01))
        wait_for(
            "several trials with validations",
            lambda: sum(t.best_validation is not None for t in cluster.client.trials(exp_id)) >= 3,
            timeout=120,
        )
        cluster.kill_master()
        time.sleep(0.5)
        cluster.start_master()
        exp = cluster.wait_state(exp_id, "COMPLETED", "ERROR", timeout=300)
        assert exp.state == "COMPLETED", cluster.log("master")
        assert_asha_ran_each_length_once(cluster, exp_id, 8)
    finally:
        cluster.stop()
