"""Slurm pools against a real one-node Slurm cluster the tests start (``tests/slurm``)."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
import yaml

from assay.config import SlurmPoolConfig
from assay.errors import ResourceManagerError
from assay.rm import ResourceManager
from assay.rm._slurm import SlurmManager, SlurmPool
from assay.rm.testing import CHECKS, Recorder, Subject
from tests.integration.cluster import Cluster, wait_for
from tests.integration.test_distributed import assert_ranks_agree, run_ddp
from tests.integration.test_lifecycle import counter_config
from tests.slurm import GangCluster, SlurmCluster, slurm_cluster, slurm_gang_cluster

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    with slurm_cluster(tmp_path_factory.mktemp("slurm")) as running:
        saved = os.environ.get("SLURM_CONF")
        os.environ.update(running.env)
        try:
            yield running
        finally:
            if saved is None:
                os.environ.pop("SLURM_CONF", None)
            else:
                os.environ["SLURM_CONF"] = saved


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__)
def test_slurm_pools_conform(
    check: Callable[[Subject], Awaitable[None]], cluster: SlurmCluster, tmp_path: Path
) -> None:
    pool = SlurmPool(
        name="hpc",
        settings=SlurmPoolConfig(partition=cluster.partition, poll_interval=0.2, kill_grace=5),
        work_dir=tmp_path / "slurm",
        master_url="http://127.0.0.1:9",
        agent_token="kit-token",
    )

    async def open_manager() -> ResourceManager:
        # A new manager each time: what a restarted master makes.
        return SlurmManager(pool)

    asyncio.run(check(Subject(open_manager=open_manager, timeout=60.0)))


def slurm_master(tmp_path: Path, slurm: SlurmCluster, **settings: object) -> Cluster:
    """A master whose default pool is the test's Slurm partition (its one node, 2 CPU slots),
    and no agent at all; ``settings``: more of the pool's ``slurm`` keys."""
    config = tmp_path / "master.yaml"
    pool = {
        "pool_name": "default",
        "type": "slurm",
        "slurm": {
            "partition": slurm.partition,
            "poll_interval": 0.2,
            "kill_grace": 5,
            **settings,
        },
    }
    config.write_text(yaml.safe_dump({"resource_pools": [pool]}))
    master = Cluster(tmp_path / "home", master_config=config)
    master.env.update(slurm.env)
    master.start_master()
    node = f"default.{slurm.node}"
    wait_for("the Slurm node to join", lambda: node in {a.id for a in master.client.agents()})
    return master


def queued_jobs(slurm: SlurmCluster) -> list[str]:
    out = subprocess.run(
        ["squeue", "--noheader", "--me", "--format=%j"],
        env={**os.environ, **slurm.env},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [name for name in out.split() if name.startswith("assay-")]


def test_an_experiment_of_eight_trials_completes_on_slurm(
    cluster: SlurmCluster, tmp_path: Path
) -> None:
    master = slurm_master(tmp_path, cluster)
    try:
        config = counter_config(
            length=20,
            searcher={"name": "random", "max_trials": 8},
            hparams={"x": {"type": "double", "minval": 1, "maxval": 10}},
        )
        exp_id = master.submit(config)
        exp = master.wait_state(exp_id, "COMPLETED", "ERROR", timeout=240)
        assert exp.state == "COMPLETED", master.log("master")
        trials = master.client.trials(exp_id)
        assert len(trials) == 8
        for trial in trials:
            assert trial.state == "COMPLETED" and trial.steps_completed == 20, trial
            assert "done at step 20" in master.trial_logs(trial.id)
        (node,) = master.client.agents()
        assert node.id == f"default.{cluster.node}" and len(node.slots) == 2
        wait_for("Slurm's queue to empty", lambda: not queued_jobs(cluster), timeout=30)
        jobs = tmp_path / "home" / "slurm" / "default" / "jobs"
        wait_for("the jobs' files to go", lambda: not any(jobs.iterdir()), timeout=30)
    finally:
        master.stop()


def test_pause_checkpoints_and_activate_resumes_through_slurm(
    cluster: SlurmCluster, tmp_path: Path
) -> None:
    master = slurm_master(tmp_path, cluster)
    try:
        exp_id = master.submit(counter_config(length=300, step_seconds=0.02))
        trial_id = wait_for("the trial", lambda: master.client.trials(exp_id))[0].id
        wait_for(
            "some training progress",
            lambda: len(master.client.metrics(trial_id, "training")) >= 30,
            timeout=120,
        )
        master.client.transition(exp_id, "pause")
        paused = wait_for(
            "the trial to stop",
            lambda: (t := master.client.trial(trial_id)).state == "PAUSED" and t,
            timeout=60,
        )
        paused_at = master.client.checkpoint(str(paused.latest_checkpoint)).steps_completed
        assert 30 <= paused_at < 300
        wait_for("the Slurm job to end", lambda: not queued_jobs(cluster), timeout=30)
        master.client.transition(exp_id, "activate")
        exp = master.wait_state(exp_id, "COMPLETED", "ERROR", timeout=180)
        assert exp.state == "COMPLETED", master.log("master")
        logs = " ".join(master.trial_logs(trial_id))
        assert f"started at step {paused_at} run 2" in logs
        steps = [m.steps_completed for m in master.client.metrics(trial_id, "training")]
        assert steps == list(range(1, 301)), "each step reported once across both Slurm jobs"
    finally:
        master.stop()


def test_a_master_killed_mid_run_reattaches_its_slurm_jobs(
    cluster: SlurmCluster, tmp_path: Path
) -> None:
    master = slurm_master(tmp_path, cluster)
    try:
        config = counter_config(
            length=150,
            step_seconds=0.02,
            searcher={"name": "random", "max_trials": 3},
            hparams={"x": {"type": "double", "minval": 1, "maxval": 2}},
            max_restarts=0,
        )
        exp_id = master.submit(config)
        wait_for(
            "two trials in progress",
            lambda: sum(t.steps_completed >= 20 for t in master.client.trials(exp_id)) >= 2,
            timeout=120,
        )
        before = set(queued_jobs(cluster))
        master.kill_master()
        time.sleep(1.0)  # the jobs train on, and may end, while no master watches
        assert before <= set(queued_jobs(cluster)) | before
        master.start_master()
        exp = master.wait_state(exp_id, "COMPLETED", "ERROR", timeout=240)
        assert exp.state == "COMPLETED", master.log("master")
        for trial in master.client.trials(exp_id):
            assert trial.state == "COMPLETED" and trial.restarts == 0, trial
            steps = [m.steps_completed for m in master.client.metrics(trial.id, "training")]
            assert steps == list(range(1, 151)), f"trial {trial.id} lost or repeated reports"
    finally:
        master.stop()


def test_killing_an_experiment_leaves_no_slurm_job(cluster: SlurmCluster, tmp_path: Path) -> None:
    master = slurm_master(tmp_path, cluster)
    try:
        exp_id = master.submit(counter_config(length=5000, step_seconds=0.05))
        trial_id = wait_for("the trial", lambda: master.client.trials(exp_id))[0].id
        wait_for(
            "training", lambda: master.client.trial(trial_id).steps_completed >= 5, timeout=120
        )
        assert queued_jobs(cluster)
        master.client.transition(exp_id, "kill")
        master.wait_state(exp_id, "CANCELED", "ERROR", timeout=60)
        wait_for("Slurm's queue to empty", lambda: not queued_jobs(cluster), timeout=30)
    finally:
        master.stop()


def test_an_agent_cannot_join_a_slurm_pool(cluster: SlurmCluster, tmp_path: Path) -> None:
    master = slurm_master(tmp_path, cluster)
    try:
        agent = subprocess.run(
            [sys.executable, "-m", "assay.agent", "--master", master.url, "--id", "intruder"],
            env=master.env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert agent.returncode != 0
        said = agent.stderr.strip()
        assert "whose nodes Slurm runs" in said and "type: agents" in said, said
        assert len(said.splitlines()) == 1, said
    finally:
        master.stop()


@pytest.fixture(scope="module")
def gang_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GangCluster]:
    with slurm_gang_cluster(tmp_path_factory.mktemp("slurm-gang")) as running:
        yield running


def test_a_two_node_gang_trains_torch_ddp_over_srun(
    gang_cluster: GangCluster, tmp_path: Path
) -> None:
    if importlib.util.find_spec("torch") is None:
        reason = "torch is not installed (pip install torch==2.13.0, or the dev extra)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"the Slurm gang test must run under CI: {reason}")
        pytest.skip(reason)
    master_url = f"http://{gang_cluster.host_address}:{{port}}"
    config = tmp_path / "master.yaml"
    master = Cluster(tmp_path / "home", master_config=config, host="0.0.0.0")
    pool = {
        "pool_name": "default",
        "type": "slurm",
        "slurm": {
            "partition": gang_cluster.partition,
            "poll_interval": 0.2,
            "kill_grace": 5,
            # The nodes reach the master across their bridge.
            "master_url": master_url.format(port=master.port),
        },
    }
    config.write_text(
        yaml.safe_dump({"resource_pools": [pool], "allowed_hosts": [gang_cluster.host_address]})
    )
    master.env.update(gang_cluster.env)
    master.start_master()
    try:
        wait_for("both Slurm nodes", lambda: len(master.client.agents()) == 2)
        trial, logs = run_ddp(master)
        assert_ranks_agree(trial, logs)
        (allocation,) = trial.allocations
        assert sorted(allocation.slots) == ["default.n1", "default.n2"], "one slot on each node"
        addresses = {int(e.rank): e.line for e in logs if "started at step 0" in str(e.line)}
        assert set(addresses) == {0, 1}, "each node's rank said it started"
    finally:
        master.stop()


def test_a_job_slurm_cancels_restarts_its_trial_from_the_checkpoint(
    cluster: SlurmCluster, tmp_path: Path
) -> None:
    master = slurm_master(tmp_path, cluster)
    try:
        exp_id = master.submit(counter_config(length=200, step_seconds=0.02, max_restarts=1))
        trial_id = wait_for("the trial", lambda: master.client.trials(exp_id))[0].id
        wait_for(
            "a checkpoint",
            lambda: (
                (t := master.client.trial(trial_id)).latest_checkpoint and t.steps_completed >= 30
            ),
            timeout=120,
        )
        # As Slurm's own preemption or an administrator would: outside assay.
        out = subprocess.run(
            ["squeue", "--noheader", "--me", "--format=%i"],
            env={**os.environ, **cluster.env},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        subprocess.run(["scancel", *out], env={**os.environ, **cluster.env}, check=True)
        exp = master.wait_state(exp_id, "COMPLETED", "ERROR", timeout=180)
        assert exp.state == "COMPLETED", master.log("master")
        trial = master.client.trial(trial_id)
        # Slurm ended the job, not the trial: its loss costs no max_restarts.
        assert (trial.restarts, trial.infra_restarts) == (0, 1)
        starts = [line for line in master.trial_logs(trial_id) if line.startswith("started")]
        assert len(starts) == 2 and not starts[1].startswith("started at step 0"), starts
    finally:
        master.stop()


def test_a_job_that_cannot_start_its_step_fails_the_trial_with_the_jobs_words(
    cluster: SlurmCluster, tmp_path: Path
) -> None:
    master = slurm_master(tmp_path, cluster, python="/nonexistent/bin/python")
    try:
        exp_id = master.submit(counter_config(length=20, max_restarts=1))
        exp = master.wait_state(exp_id, "ERROR", "COMPLETED", timeout=120)
        assert exp.state == "ERROR"
        (trial,) = master.client.trials(exp_id)
        assert trial.restarts == 2, "each failed job counted against max_restarts"
        message = str(master.client.trial(trial.id).message)
        assert "before assay's step started" in message, message
        assert "/nonexistent/bin/python" in message, message
        wait_for("Slurm's queue to empty", lambda: not queued_jobs(cluster), timeout=30)
    finally:
        master.stop()


def test_a_partition_slurm_lacks_is_named_with_the_partitions_it_has(
    cluster: SlurmCluster, tmp_path: Path
) -> None:
    pool = SlurmPool(
        name="hpc",
        settings=SlurmPoolConfig(partition="nosuch"),
        work_dir=tmp_path / "slurm",
        master_url="http://127.0.0.1:9",
        agent_token="t",
    )

    async def opened() -> None:
        manager = SlurmManager(pool)
        try:
            await manager.open(Recorder())
        finally:
            await manager.close()

    with pytest.raises(ResourceManagerError) as caught:
        asyncio.run(opened())
    message = caught.value.message
    assert "no partition 'nosuch'" in message and cluster.partition in message, message
