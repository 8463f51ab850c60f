"""Scheduling on a real cluster: pools, priority preemption, fair share, the job queue, the
preemption timeout and autoscaling."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from websockets.asyncio.client import connect

from assay import rest
from assay.errors import Conflict, InvalidConfig
from tests.integration.cluster import Cluster, serve, wait_for

pytestmark = pytest.mark.integration

MASTER_YAML = """
resource_pools:
  - pool_name: default
    scheduler: {type: priority, preemption: true}
    preemption_timeout: 3
  - pool_name: shared
    description: fair share between experiments
    scheduler: {type: fair_share, preemption: true}
"""


def counter(
    length: int, *, priority: int | None = None, pool: str | None = None, **more: Any
) -> str:
    searcher = more.pop("searcher", {"name": "single"})
    resources: dict[str, Any] = more.pop("resources", {})
    if priority is not None:
        resources["priority"] = priority
    if pool is not None:
        resources["resource_pool"] = pool
    return yaml.safe_dump(
        {
            "name": more.pop("name", "counter"),
            "entrypoint": "python3 train.py",
            "hyperparameters": {"step_seconds": 0.02, "checkpoint_every": 10, **more},
            "searcher": {"metric": "loss", "max_length": {"batches": length}, **searcher},
            "resources": resources,
        }
    )


@pytest.fixture
def pools(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    config = tmp_path / "master.yaml"
    config.write_text(MASTER_YAML)
    cluster = Cluster(tmp_path / "home", master_config=config)
    cluster.start_master()
    cluster.start_agent("solo", slots=1)
    yield from serve(cluster, request)


def only_trial(cluster: Cluster, exp_id: int) -> rest.Trial:
    return wait_for("its trial", lambda: cluster.client.trials(exp_id))[0]


def starts(cluster: Cluster, trial_id: int) -> list[str]:
    return [ln for ln in cluster.trial_logs(trial_id) if ln.startswith("started at step")]


def test_higher_priority_preempts_and_the_victim_resumes_from_its_checkpoint(
    pools: Cluster,
) -> None:
    low = pools.submit(counter(300, priority=60, name="low"))
    low_trial = only_trial(pools, low).id
    wait_for("low to train", lambda: pools.client.trial(low_trial).steps_completed >= 20)
    high = pools.submit(counter(30, priority=10, name="high"))
    pools.wait_state(high, "COMPLETED", timeout=120)
    pools.wait_state(low, "COMPLETED", timeout=180)
    trial = pools.client.trial(low_trial)
    assert trial.restarts == 0 and trial.runs == 2
    assert trial.allocations[0].preempt == "scheduler"
    _, second = starts(pools, low_trial)
    resumed = int(second.split()[3])
    assert resumed >= 20, "resumed from its checkpoint, not from zero"
    high_alloc = pools.client.trial(only_trial(pools, high).id).allocations[0]
    assert high_alloc.created_at >= trial.allocations[0].ended_at - 0.5
    # Durations count from the first run's start: not the creation, nor the resumption.
    assert trial.started_at == trial.allocations[0].started_at
    assert trial.started_at is not None and trial.started_at >= trial.created_at
    [low_exp] = [e for e in pools.client.list_experiments().experiments if e.id == low]
    assert low_exp.started_at == trial.started_at
    high_trial = pools.client.trial(only_trial(pools, high).id)
    assert high_trial.started_at == high_alloc.started_at
    assert pools.client.experiment(high).started_at == high_trial.started_at


def test_a_trial_ignoring_preemption_is_killed_after_the_timeout_and_requeued(
    pools: Cluster,
) -> None:
    stubborn = pools.submit(counter(400, priority=60, ignore_preempt=True, name="stubborn"))
    trial_id = only_trial(pools, stubborn).id
    wait_for("a checkpoint", lambda: pools.client.trial(trial_id).latest_checkpoint)
    urgent = pools.submit(counter(10, priority=5, name="urgent"))
    pools.wait_state(urgent, "COMPLETED", timeout=120)
    first = pools.client.trial(trial_id).allocations[0]
    assert "preemption timeout" in first.exit_reason
    assert first.ended_at - 3 >= first.created_at
    pools.client.transition(stubborn, "kill")
    trial = pools.client.trial(trial_id)
    assert trial.restarts == 0, "a preemption kill is not a failure"


def test_job_queue_lists_reorders_and_refuses_what_the_pool_does_not_allow(
    pools: Cluster,
) -> None:
    first = pools.submit(counter(2000, name="first_job"))
    wait_for("first to run", lambda: only_trial(pools, first).state == "RUNNING")
    second = pools.submit(counter(20, name="second_job"))
    queue = wait_for(
        "both jobs listed",
        lambda: len(q := pools.client.jobs().jobs) == 2 and q,
    )
    assert [j.name for j in queue] == ["first_job", "second_job"]
    assert [j.status for j in queue] == ["RUNNING", "QUEUED"]
    assert [(j.slots_acquired, j.slots_needed) for j in queue] == [(1, 1), (0, 1)]
    shown = pools.cli("job", "list", check=True).stdout
    for column in (
        "#",
        "ID",
        "Type",
        "Job Name",
        "Priority",
        "Submitted",
        "Slots",
        "Status",
        "User",
    ):
        assert column in shown
    first_id, second_id = queue[0].id, queue[1].id

    refused = pools.cli("job", "update", second_id, "--weight", "2")
    assert refused.returncode == 1
    assert "uses the priority scheduler" in refused.stderr and "--priority" in refused.stderr

    pools.cli("job", "update", second_id, "--ahead-of", first_id, check=True)
    reordered = pools.client.jobs().jobs
    assert [j.name for j in reordered] == ["second_job", "first_job"]
    pools.wait_state(second, "COMPLETED", timeout=120)

    pools.cli("job", "update-batch", f"{first_id}.priority=1", check=True)
    assert pools.client.jobs().jobs[0].priority == 1
    with pytest.raises(Conflict):
        pools.client.update_jobs(
            [
                rest.BatchChange(job_id=first_id, priority=3),
                rest.BatchChange(job_id=first_id, weight=2.0),
            ]
        )
    assert pools.client.jobs().jobs[0].priority == 1, "a refused batch changes nothing"

    pools.cli("e", "set", "max-slots", str(first), "0", check=True)
    pools.cli("e", "set", "priority", str(first), "7", check=True)
    exp = pools.client.experiment(first)
    assert pools.client.jobs().jobs[0].priority == 7
    assert exp.resource_pool == ""
    pools.cli("job", "update", first_id, "--resource-pool", "shared", check=True)
    shared = pools.client.jobs("shared")
    assert [j.id for j in shared.jobs] == [first_id]
    assert shared.scheduler == "fair_share"
    pools.client.transition(first, "kill")


def test_an_experiment_change_is_applied_whole_or_not_at_all(pools: Cluster) -> None:
    exp = pools.submit(counter(2000, priority=40, name="patched"))
    job = wait_for("its job listed", lambda: pools.client.jobs().jobs)[0]
    # A weight, on a pool that orders jobs by priority: refused, and the rest not applied.
    change = rest.ExperimentResources(priority=5, max_slots=1, weight=2.0)
    with pytest.raises(Conflict, match="uses the priority scheduler"):
        pools.client.set_experiment(exp, change)
    (after,) = pools.client.jobs().jobs
    assert (after.id, after.priority, after.max_slots) == (job.id, 40, None)
    assert pools.client.experiment(exp).config["resources"]["priority"] == 40
    changed = pools.client.set_experiment(exp, rest.ExperimentResources(priority=5))
    assert changed.id == exp and changed.config["resources"]["priority"] == 5
    assert pools.client.jobs().jobs[0].priority == 5
    # Its trial may start between the answer and the read: what running moves is left out.
    moving = {"started_at", "trials", "state", "progress"}
    stored = pools.client.experiment(exp)
    assert {k: v for k, v in rest.to_json(stored).items() if k not in moving} == {
        k: v for k, v in rest.to_json(changed).items() if k not in moving
    }, "the answer is the experiment as stored"
    pools.client.transition(exp, "kill")


def test_unknown_pools_are_refused_for_experiments_and_agents(pools: Cluster) -> None:
    with pytest.raises(InvalidConfig, match="this cluster has: default, shared"):
        pools.submit(counter(10, pool="gpus"))

    async def hello() -> dict[str, Any]:
        ws_url = pools.url.replace("http", "ws") + "/api/v1/agents/ws"
        async with connect(ws_url) as ws:
            await ws.send(
                json.dumps(
                    {
                        "type": "hello",
                        "agent_id": "x",
                        "pool": "nope",
                        "slots": [],
                        "token": pools.env["ASSAY_AGENT_TOKEN"],
                    }
                )
            )
            return dict(json.loads(await ws.recv()))

    answer = asyncio.run(hello())
    assert answer["type"] == "error"
    assert "resource pool 'nope'" in answer["message"] and "default, shared" in answer["message"]
    agent = subprocess.run(
        [sys.executable, "-m", "assay.agent", "--master", pools.url, "--pool", "nope"],
        env=pools.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert agent.returncode == 1, "an agent refused by the master stops instead of retrying"
    assert "start the agent with --pool NAME" in agent.stderr


def test_fair_share_splits_a_pool_between_experiments(pools: Cluster) -> None:
    pools.start_agent("shared-1", slots=2, pool="shared")
    greedy = pools.submit(
        counter(
            600,
            pool="shared",
            name="greedy",
            searcher={"name": "random", "max_trials": 2, "max_concurrent_trials": 2},
            x={"type": "double", "minval": 1, "maxval": 2},
        )
    )
    wait_for(
        "greedy to hold both slots",
        lambda: pools.client.jobs("shared").jobs[0].slots_acquired == 2,
    )
    polite = pools.submit(counter(30, pool="shared", name="polite"))
    pools.wait_state(polite, "COMPLETED", timeout=120)
    trials = pools.client.trials(greedy)
    preempted = [
        t
        for t in trials
        if any(a.preempt == "scheduler" for a in pools.client.trial(t.id).allocations)
    ]
    assert len(preempted) == 1, "exactly one slot was given back"
    pools.client.transition(greedy, "kill")


def test_autoscaling_launches_an_agent_for_queued_work_and_stops_it_when_idle(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "instances"
    run_dir.mkdir()
    launch = textwrap.dedent(
        f"""
        setsid {sys.executable} -m assay.agent --id "$ASSAY_INSTANCE_ID" --pool "$ASSAY_POOL" \\
          --slots "$ASSAY_SLOTS" --master "$ASSAY_MASTER" --home {tmp_path / "home"} \\
          > {run_dir}/"$ASSAY_INSTANCE_ID".log 2>&1 &
        echo $! > {run_dir}/"$ASSAY_INSTANCE_ID".pid
        """
    ).strip()
    terminate = f'kill $(cat {run_dir}/"$ASSAY_INSTANCE_ID".pid)'
    config = tmp_path / "master.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "resource_pools": [
                    {"pool_name": "default"},
                    {
                        "pool_name": "cloud",
                        "provider": {
                            "type": "command",
                            "launch_command": launch,
                            "terminate_command": terminate,
                            "max_instances": 2,
                            "idle_timeout": 2,
                            "startup_timeout": 60,
                            "slots_per_instance": 1,
                        },
                    },
                ]
            }
        )
    )
    cluster = Cluster(tmp_path / "home", master_config=config)
    cluster.start_master()
    try:
        exp = cluster.submit(counter(20, pool="cloud", name="elastic"))
        cluster.wait_state(exp, "COMPLETED", timeout=120)
        pool = next(p for p in cluster.client.resource_pools() if p.name == "cloud")
        assert len(pool.instances) == 1
        instance = pool.instances[0]
        trial = cluster.client.trial(cluster.client.trials(exp)[0].id)
        assert list(trial.allocations[0].slots) == [instance.id]
        wait_for(
            "the idle instance to be terminated",
            lambda: (
                next(p for p in cluster.client.resource_pools() if p.name == "cloud")
                .instances[0]
                .state
                == "TERMINATED"
            ),
            timeout=60,
        )
        wait_for(
            "its agent to go",
            lambda: not any(a.connected for a in cluster.client.agents()),
            timeout=30,
        )
    finally:
        cluster.stop()


def test_a_master_with_an_agent_token_takes_only_agents_that_present_it(tmp_path: Path) -> None:
    config = tmp_path / "master.yaml"
    config.write_text("agent_token: s3cret\n")
    cluster = Cluster(tmp_path / "home", master_config=config)
    cluster.start_master()
    try:
        base = [sys.executable, "-m", "assay.agent", "--master", cluster.url, "--id", "a"]
        refused = subprocess.run(
            base, env=cluster.env, capture_output=True, text=True, timeout=60, check=False
        )
        assert refused.returncode == 1
        assert "did not present this cluster's agent token" in refused.stderr
        cluster.env["ASSAY_AGENT_TOKEN"] = "s3cret"
        cluster.start_agent("a", slots=1)
        exp = cluster.submit(counter(10))
        cluster.wait_state(exp, "COMPLETED", timeout=120)
    finally:
        cluster.stop()
