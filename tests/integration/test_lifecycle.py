"""Experiments run end to end on a real master and agent: pause, resume, crash, restart."""

from __future__ import annotations

import os
import signal
from typing import Any

import pytest
import yaml

from tests.integration.cluster import Cluster, wait_for

pytestmark = pytest.mark.integration


def counter_config(
    *,
    length: int = 100,
    searcher: dict[str, Any] | None = None,
    hparams: dict[str, Any] | None = None,
    step_seconds: float = 0.01,
    max_restarts: int = 5,
) -> str:
    config = {
        "name": "counter",
        "entrypoint": "python3 train.py",
        "hyperparameters": {
            "step_seconds": step_seconds,
            "checkpoint_every": 10,
            **(hparams or {}),
        },
        "searcher": {
            "name": "single",
            "metric": "loss",
            "max_length": {"batches": length},
            **(searcher or {}),
        },
        "max_restarts": max_restarts,
    }
    return yaml.safe_dump(config)


def trial_of(cluster: Cluster, experiment_id: int) -> dict[str, object]:
    trials = cluster.client.trials(experiment_id)
    assert len(trials) == 1, trials
    return trials[0]


def test_single_trial_runs_to_completion_and_reports(cluster: Cluster) -> None:
    exp_id = cluster.submit(counter_config(length=30))
    exp = cluster.wait_state(exp_id, "COMPLETED")
    trial = trial_of(cluster, exp_id)
    assert trial.state == "COMPLETED"
    assert trial.steps_completed == 30
    assert exp.best_trial.id == trial.id
    assert trial.best_validation == pytest.approx(1.0 / 30)
    training = cluster.client.metrics(int(trial.id), "training")
    assert [m.steps_completed for m in training] == list(range(1, 31))
    checkpoints = cluster.client.trial_checkpoints(int(trial.id))
    assert [c.steps_completed for c in checkpoints] == [10, 20, 30]
    assert trial.latest_checkpoint == checkpoints[-1].uuid
    logs = cluster.trial_logs(int(trial.id))
    assert any(line.startswith("started at step 0 run 1") for line in logs)
    assert "done at step 30" in logs
    assert 'metadata {"steps_completed": 30, "run": 1}' in logs  # checkpoint.get_metadata
    # train.get_experiment_best_validation: the validation the trial just reported.
    assert f"best validation {1.0 / 30}" in logs


def test_pause_resumes_from_checkpointed_step(cluster: Cluster) -> None:
    exp_id = cluster.submit(counter_config(length=400, step_seconds=0.02))
    trial_id = wait_for("the trial to start", lambda: cluster.client.trials(exp_id))[0].id
    wait_for(
        "some training progress",
        lambda: len(cluster.client.metrics(trial_id, "training")) >= 40,
    )
    cluster.client.transition(exp_id, "pause")
    cluster.wait_state(exp_id, "PAUSED")
    paused = wait_for(
        "the trial to stop",
        lambda: (t := cluster.client.trial(trial_id)).state == "PAUSED" and t,
    )
    checkpoint = cluster.client.checkpoint(str(paused.latest_checkpoint))
    paused_at = checkpoint.steps_completed
    assert 40 <= paused_at < 400
    assert any(
        line.startswith(f"preempted at step {paused_at}") for line in cluster.trial_logs(trial_id)
    )
    agents = cluster.client.agents()
    assert not any(slot.allocated for a in agents for slot in a.slots), "slots not freed"

    cluster.client.transition(exp_id, "activate")
    cluster.wait_state(exp_id, "COMPLETED")
    logs = cluster.trial_logs(trial_id)
    assert f"started at step {paused_at} run 2" in " ".join(logs), logs
    trial = cluster.client.trial(trial_id)
    assert trial.steps_completed == 400
    assert trial.restarts == 0
    steps = [m.steps_completed for m in cluster.client.metrics(trial_id, "training")]
    assert steps == list(range(1, 401)), "each step reported once across both runs"


def test_sigkill_of_trial_restarts_from_its_checkpoint(cluster: Cluster) -> None:
    exp_id = cluster.submit(counter_config(length=300, step_seconds=0.02))
    trial_id = wait_for("the trial to start", lambda: cluster.client.trials(exp_id))[0].id
    wait_for(
        "a checkpoint at step 30 or later",
        lambda: (
            (uuid := cluster.client.trial(trial_id).latest_checkpoint)
            and cluster.client.checkpoint(uuid).steps_completed >= 30
        ),
    )
    first = next(
        line for line in cluster.trial_logs(trial_id) if line.startswith("started at step")
    )
    pid = int(first.rsplit(" ", 1)[1])
    os.kill(pid, signal.SIGKILL)
    cluster.wait_state(exp_id, "COMPLETED")
    trial = cluster.client.trial(trial_id)
    assert trial.restarts == 1
    assert "killed by signal 9" in str(trial.message)
    starts = [line for line in cluster.trial_logs(trial_id) if line.startswith("started at step")]
    assert len(starts) == 2
    resumed_at = int(starts[1].split()[3])
    assert resumed_at >= 30 and resumed_at % 10 == 0, starts
    steps = [m.steps_completed for m in cluster.client.metrics(trial_id, "training")]
    assert steps == list(range(1, 301))


def test_trial_failing_more_than_max_restarts_errors(cluster: Cluster) -> None:
    config = counter_config(length=50, max_restarts=0, hparams={"fail_once_at": 15})
    exp_id = cluster.submit(config)
    exp = cluster.wait_state(exp_id, "ERROR", "COMPLETED")
    trial = trial_of(cluster, exp_id)
    assert trial.state == "ERROR"
    assert "exit code 3" in str(trial.message)
    assert exp.state == "ERROR"


def test_trial_failing_once_restarts_and_completes(cluster: Cluster) -> None:
    config = counter_config(length=50, max_restarts=1, hparams={"fail_once_at": 25})
    exp_id = cluster.submit(config)
    cluster.wait_state(exp_id, "COMPLETED")
    trial = trial_of(cluster, exp_id)
    assert trial.state == "COMPLETED"
    assert trial.restarts == 1
    starts = [line for line in cluster.trial_logs(int(trial.id)) if line.startswith("started")]
    assert starts[1].startswith("started at step 20 run 2")


def test_random_search_runs_every_trial(cluster: Cluster) -> None:
    config = counter_config(
        length=20,
        searcher={"name": "random", "max_trials": 5},
        hparams={"x": {"type": "double", "minval": 1, "maxval": 10}},
    )
    exp_id = cluster.submit(config)
    exp = cluster.wait_state(exp_id, "COMPLETED")
    trials = cluster.client.trials(exp_id)
    assert len(trials) == 5
    assert all(t.state == "COMPLETED" and t.steps_completed == 20 for t in trials)
    best = min(trials, key=lambda t: t.best_validation)
    assert exp.best_trial.id == best.id
    assert exp.progress == 1.0
    (listed,) = [e for e in cluster.client.list_experiments().experiments if e.id == exp_id]
    assert listed.best_trial == exp.best_trial, "the list shows the best trial describe shows"


def test_ended_experiment_keeps_only_the_checkpoints_its_policy_asks_for(
    cluster: Cluster,
) -> None:
    config = yaml.safe_load(counter_config(length=30, searcher={"name": "random", "max_trials": 2}))
    config["hyperparameters"]["x"] = {"type": "double", "minval": 1, "maxval": 10}
    exp_id = cluster.submit(yaml.safe_dump(config))
    cluster.wait_state(exp_id, "COMPLETED")
    storage = cluster.home / "checkpoints"

    def collected() -> bool:
        # DELETING is the marked-but-not-yet-removed state; wait until the files are gone.
        return all(
            c.state == "DELETED" or (c.state == "ACTIVE" and c.steps_completed == 30)
            for c in cluster.client.experiment_checkpoints(exp_id)
        )

    wait_for("garbage collection", collected)
    ckpts = cluster.client.experiment_checkpoints(exp_id)
    assert len(ckpts) == 6
    for ckpt in ckpts:
        # Defaults: each trial's best (validated at 30) and latest (30) are kept.
        kept = ckpt.steps_completed == 30
        assert ckpt.state == ("ACTIVE" if kept else "DELETED")
        assert (storage / ckpt.uuid).exists() == kept


def test_cancel_stops_running_trials_and_kill_ends_them(cluster: Cluster) -> None:
    exp_id = cluster.submit(counter_config(length=10_000, step_seconds=0.02))
    trial_id = wait_for("the trial to start", lambda: cluster.client.trials(exp_id))[0].id
    wait_for("progress", lambda: cluster.client.trial(trial_id).steps_completed >= 10)
    cluster.client.transition(exp_id, "cancel")
    cluster.wait_state(exp_id, "CANCELED")
    assert cluster.client.trial(trial_id).state == "CANCELED"
    assert any("preempted at step" in line for line in cluster.trial_logs(trial_id))

    exp2 = cluster.submit(counter_config(length=10_000, step_seconds=0.02))
    trial2 = wait_for("the trial to start", lambda: cluster.client.trials(exp2))[0].id
    wait_for("it to run", lambda: cluster.client.trial(trial2).state == "RUNNING")
    cluster.client.transition(exp2, "kill")
    cluster.wait_state(exp2, "CANCELED")
    assert cluster.client.trial(trial2).state == "CANCELED"


def test_archive_only_ended_experiments_and_list_hides_them(cluster: Cluster) -> None:
    from assay.errors import InvalidTransition

    exp_id = cluster.submit(counter_config(length=10_000), activate=False)
    with pytest.raises(InvalidTransition, match="only an ended experiment"):
        cluster.client.transition(exp_id, "archive")
    cluster.client.transition(exp_id, "kill")
    cluster.wait_state(exp_id, "CANCELED")
    archived = cluster.cli("e", "archive", str(exp_id), check=True)
    # The state it ended in, said as such (not "archived; now CANCELED").
    assert archived.stdout == f"experiment {exp_id} archived (state: CANCELED)\n"
    listed = cluster.client.list_experiments().experiments
    assert exp_id not in [e.id for e in listed]
    listed_all = cluster.client.list_experiments(archived=True).experiments
    assert exp_id in [e.id for e in listed_all]
    cluster.client.transition(exp_id, "unarchive")
    assert exp_id in [e.id for e in cluster.client.list_experiments().experiments]
