"""Trials in containers: an agent given podman runs a trial that names an image inside it, with
its startup hook, through pause and activate, and leaves no container behind; a pool whose
agents run no containers refuses such a trial at submission."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from assay.errors import InvalidRequest
from tests.containers import (
    CONTAINERS_CONF,
    MARKER,
    MARKER_TEXT,
    containers_of,
    ensure_test_image,
)
from tests.integration.cluster import CONTEXTS, Cluster, serve, wait_for

IN_IMAGE = CONTEXTS / "in_image"


def _config(image: str, *, steps: int, step_seconds: float = 0.01, **extra: object) -> str:
    return yaml.safe_dump(
        {
            **extra,
            "name": "in-a-container",
            "entrypoint": "python3 train.py",
            "environment": {"image": image},
            "hyperparameters": {"steps": steps, "step_seconds": step_seconds},
            "searcher": {"name": "single", "metric": "loss", "max_length": steps},
            "max_restarts": 0,
        }
    )


@pytest.fixture(scope="module")
def image() -> str:
    return ensure_test_image()


@pytest.fixture
def podman_cluster(tmp_path: Path, request: pytest.FixtureRequest, image: str) -> Iterator[Cluster]:
    cluster = Cluster(tmp_path / "home")
    cluster.env["CONTAINERS_CONF"] = str(CONTAINERS_CONF)
    cluster.start_master()
    cluster.start_agent(extra=("--container-runtime", "podman"))
    yield from serve(cluster, request)


def test_a_trial_naming_an_image_runs_in_its_container_after_its_hook_with_its_mounts(
    podman_cluster: Cluster, image: str
) -> None:
    cluster = podman_cluster
    assert [a.container_runtime for a in cluster.client.agents()] == ["podman"]
    data = cluster.home.parent / "data"
    data.mkdir()
    (data / "hello.txt").write_text("from the host\n")
    mount = {"host_path": str(data), "container_path": "/mnt/assay-test-data", "read_only": True}
    exp_id = cluster.submit(_config(image, steps=5, bind_mounts=[mount]), context=IN_IMAGE)
    cluster.wait_state(exp_id, "COMPLETED", timeout=180)
    (trial,) = cluster.client.trials(exp_id)
    logs = cluster.trial_logs(trial.id)
    assert f"hook saw: {MARKER_TEXT}" in logs, logs
    assert f"trial saw: {MARKER_TEXT}" in logs, logs
    # The hook's variables reach the trial; the Python is the image's, not the agent's.
    assert "HOOK_VAR=set-by-the-hook python=/usr/bin/python3" in logs, logs
    assert "bind mount saw: from the host" in logs, logs
    assert [m.metrics["loss"] for m in cluster.client.metrics(trial.id, "validation")] == [0.2]
    assert cluster.client.trial(trial.id).latest_checkpoint is not None
    assert containers_of("agent-1", cluster.home) == []


def _training(
    cluster: Cluster, image: str, steps: int, step_seconds: float, seen: int
) -> tuple[int, int]:
    """Submit a trial in the image; (experiment id, trial id) once it reported ``seen`` steps."""
    config = _config(image, steps=steps, step_seconds=step_seconds)
    exp_id = cluster.submit(config, context=IN_IMAGE)
    trial_id = wait_for("the trial to start", lambda: cluster.client.trials(exp_id))[0].id
    wait_for(
        f"{seen} steps trained in the container",
        lambda: len(cluster.client.metrics(trial_id, "training")) >= seen,
        timeout=120,
    )
    return exp_id, trial_id


def test_pause_and_activate_resume_a_trial_in_a_container_from_its_checkpoint(
    podman_cluster: Cluster, image: str
) -> None:
    cluster = podman_cluster
    exp_id, trial_id = _training(cluster, image, steps=400, step_seconds=0.02, seen=30)
    cluster.client.transition(exp_id, "pause")
    cluster.wait_state(exp_id, "PAUSED")
    paused = wait_for(
        "the trial to stop", lambda: (t := cluster.client.trial(trial_id)).state == "PAUSED" and t
    )
    checkpoint = cluster.client.checkpoint(str(paused.latest_checkpoint))
    paused_at = checkpoint.steps_completed
    assert 30 <= paused_at < 400
    assert f"preempted at step {paused_at}" in cluster.trial_logs(trial_id)
    wait_for("its container to go", lambda: containers_of("agent-1", cluster.home) == [])

    cluster.client.transition(exp_id, "activate")
    cluster.wait_state(exp_id, "COMPLETED", timeout=180)
    logs = cluster.trial_logs(trial_id)
    assert f"started at step {paused_at} run 2" in logs, logs
    assert logs.count(f"trial saw: {MARKER_TEXT}") == 2
    assert cluster.client.trial(trial_id).steps_completed == 400
    assert containers_of("agent-1", cluster.home) == []


def test_killing_a_trial_in_a_container_signals_it_and_leaves_no_container_behind(
    podman_cluster: Cluster, image: str
) -> None:
    cluster = podman_cluster
    exp_id, trial_id = _training(cluster, image, steps=100_000, step_seconds=0.05, seen=3)
    assert len(containers_of("agent-1", cluster.home)) == 1
    cluster.client.transition(exp_id, "kill")
    cluster.wait_state(exp_id, "CANCELED", "ERROR", timeout=60)
    wait_for("the container to go", lambda: not containers_of("agent-1", cluster.home), timeout=30)
    # The kill's SIGTERM went through the runtime to the trial, which could have checkpointed.
    wait_for(
        "the trial's line about the signal",
        lambda: "SIGTERM reached the trial" in cluster.trial_logs(trial_id),
    )


def _pai_job(image: str) -> str:
    return json.dumps(
        {
            "jobName": "in-a-container",
            "image": image,
            "taskRoles": [
                {
                    "name": "default",
                    "taskNumber": 1,
                    "cpuNumber": 1,
                    "memoryMB": 100,
                    "gpuNumber": 0,
                    "command": f"echo job saw: $(cat {MARKER}) && python3 -c 'print(6 * 7)'",
                }
            ],
        }
    )


def test_an_openpai_jobs_image_runs_its_instances_in_containers_where_agents_run_them(
    podman_cluster: Cluster, image: str
) -> None:
    cluster = podman_cluster
    task = cluster.client.submit_job(_pai_job(image))
    assert any("run in containers of " + image in note for note in task.notes), task.notes
    ended = wait_for(
        "the job to end",
        lambda: (t := cluster.client.task(task.id)).ended_at is not None and t,
        timeout=120,
    )
    lines = [e.line for e in cluster.client.task_logs(task.id)]
    assert ended.state == "SUCCEEDED", lines
    assert f"job saw: {MARKER_TEXT}" in lines and "42" in lines, lines
    assert not any("is recorded; no container runtime" in line for line in lines)
    assert containers_of("agent-1", cluster.home) == []


def test_an_openpai_jobs_image_is_recorded_where_no_agent_of_the_pool_runs_containers(
    cluster: Cluster,
) -> None:
    # The fixture's agent-1 runs no container runtime.
    task = cluster.client.submit_job(_pai_job("team/train:1"))
    assert any("recorded as the image of every instance" in note for note in task.notes)
    wait_for("the job to end", lambda: cluster.client.task(task.id).ended_at is not None)
    lines = [e.line for e in cluster.client.task_logs(task.id)]
    # The command ran on the agent's host, where no test image's file is.
    assert "job saw:" in lines and "42" in lines, lines
    assert any("is recorded; no container runtime" in line for line in lines)


def test_an_image_is_refused_at_submission_where_no_agent_of_the_pool_runs_containers(
    cluster: Cluster,
) -> None:
    # The fixture's agent-1 runs no container runtime.
    with pytest.raises(InvalidRequest) as refused:
        cluster.submit(_config("team/train:1", steps=5), context=IN_IMAGE)
    text = str(refused.value)
    assert "environment.image" in text and "'team/train:1'" in text
    assert "--container-runtime podman" in text
    assert cluster.client.list_experiments().experiments == [], "nothing was created"


def test_an_agent_refuses_to_start_with_a_runtime_it_cannot_run(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "assay.agent", "--container-runtime", "podman",
         "--home", str(tmp_path)],
        env={"PATH": str(tmp_path), "HOME": str(tmp_path)},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr == (
        "error: --container-runtime podman: there is no podman command on this host's PATH\n"
    )


def test_a_container_left_by_an_agent_that_died_goes_when_the_agent_starts_again(
    podman_cluster: Cluster, image: str
) -> None:
    cluster = podman_cluster
    _training(cluster, image, steps=100_000, step_seconds=0.05, seen=3)
    (left,) = containers_of("agent-1", cluster.home)
    agent = cluster.agents["agent-1"]
    agent.send_signal(signal.SIGKILL)
    agent.wait(timeout=30)
    time.sleep(1)
    assert left in containers_of("agent-1", cluster.home), "the runtime kept it running"
    cluster.start_agent(extra=("--container-runtime", "podman"))
    wait_for(
        "the dead agent's container to go",
        lambda: left not in containers_of("agent-1", cluster.home),
        timeout=60,
    )
