"""Determined Core API code run unchanged on a real cluster: ``import determined as det``
scripts (metrics, checkpoints, pause and activate, ASHA with ``time_metric``), and DDP under
``determined.launch.torch_distributed`` on two slots of one agent and on two agents."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from assay import rest
from tests.integration.cluster import CONTEXTS, Cluster, serve, wait_for

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "determined"
ANNOUNCE = "assay: 'import determined' uses assay's Determined-compatible Core API"


def config(**overrides: Any) -> str:
    base: dict[str, Any] = {
        "name": "determined-style",
        "entrypoint": "python3 train.py",
        "hyperparameters": {"checkpoint_every": 10, "step_seconds": 0.01},
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 30}},
        "max_restarts": 1,
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            base[key] = {**base[key], **value}
        else:
            base[key] = value
    return yaml.safe_dump(base)


def only_trial(cluster: Cluster, exp_id: int) -> rest.Trial:
    trials = cluster.client.trials(exp_id)
    assert len(trials) == 1, trials
    return trials[0]


def test_a_determined_script_reports_metrics_and_checkpoints(cluster: Cluster) -> None:
    exp_id = cluster.submit(config(), CONTEXTS / "determined")
    exp = cluster.wait_state(exp_id, "COMPLETED", "ERROR", timeout=120)
    trial = only_trial(cluster, exp_id)
    logs = cluster.trial_logs(int(trial.id))
    assert exp.state == "COMPLETED", logs[-30:]
    assert logs.count(ANNOUNCE) == 1, "the trial log says once which determined is in use"
    assert trial.steps_completed == 30
    training = cluster.client.metrics(int(trial.id), "training")
    assert [m.steps_completed for m in training] == list(range(1, 31))
    checkpoints = cluster.client.trial_checkpoints(int(trial.id))
    assert [c.steps_completed for c in checkpoints] == [10, 20, 30]
    assert trial.best_validation == pytest.approx(1.0 / 30)
    assert "done at step 30" in logs


@pytest.mark.parametrize("native_parallel", [False, True])
def test_a_two_slot_trial_runs_its_entrypoint_once_on_its_agent(
    cluster: Cluster, native_parallel: bool
) -> None:
    submitted = config(
        resources={"slots_per_trial": 2, "native_parallel": native_parallel},
        searcher={"max_length": {"batches": 10}},
    )
    exp_id = cluster.submit(submitted, CONTEXTS / "determined")
    exp = cluster.wait_state(exp_id, "COMPLETED", "ERROR", timeout=120)
    trial = only_trial(cluster, exp_id)
    logs = cluster.trial_logs(int(trial.id))
    assert exp.state == "COMPLETED", logs[-30:]
    nodes = [line for line in logs if line.startswith("node ")]
    # native_parallel: the code starts its own processes; no layout tells a launcher about ranks.
    assert nodes == [f"node 0 of 1 slots 2 layout {not native_parallel} rank None"], logs
    assert [line for line in logs if line.startswith("started at step")] == [
        "started at step 0 run 1"
    ]


def test_pause_and_activate_resume_a_determined_script_at_its_step(cluster: Cluster) -> None:
    submitted = config(
        hyperparameters={"step_seconds": 0.02},
        searcher={"max_length": {"batches": 300}},
    )
    exp_id = cluster.submit(submitted, CONTEXTS / "determined")
    trial_id = wait_for("the trial to start", lambda: cluster.client.trials(exp_id))[0].id
    wait_for("some progress", lambda: len(cluster.client.metrics(trial_id, "training")) >= 30)
    cluster.client.transition(exp_id, "pause")
    cluster.wait_state(exp_id, "PAUSED")
    paused = wait_for(
        "the trial to stop", lambda: (t := cluster.client.trial(trial_id)).state == "PAUSED" and t
    )
    paused_at = cluster.client.checkpoint(str(paused.latest_checkpoint)).steps_completed
    assert 30 <= paused_at < 300
    assert f"preempted at step {paused_at}" in cluster.trial_logs(trial_id)
    cluster.client.transition(exp_id, "activate")
    cluster.wait_state(exp_id, "COMPLETED", timeout=120)
    logs = cluster.trial_logs(trial_id)
    assert f"started at step {paused_at} run 2" in logs, logs
    steps = [m.steps_completed for m in cluster.client.metrics(trial_id, "training")]
    assert steps == list(range(1, 301)), "each step reported once across both runs"


def test_asha_with_a_time_metric_stops_determined_scripts_that_fall_behind(
    cluster: Cluster,
) -> None:
    searcher = {
        "name": "adaptive_asha",
        "metric": "loss",
        "max_trials": 6,
        "time_metric": "batches",
        "max_time": 40,
        "divisor": 2,
        "max_rungs": 3,
        "mode": "aggressive",
    }
    submitted = yaml.safe_load(config())
    submitted["searcher"] = searcher
    submitted["hyperparameters"] = {
        "checkpoint_every": 5,
        # Slow enough that the stop ASHA decides reaches a trial before it has trained all 40
        # batches, on a machine busy with other tests too (at 0.05 s none was stopped in time).
        "step_seconds": 0.1,
        "max_batches": 40,
        "x": {"type": "double", "minval": 0.5, "maxval": 5.0},
    }
    exp_id = cluster.submit(yaml.safe_dump(submitted), CONTEXTS / "determined")
    exp = cluster.wait_state(exp_id, "COMPLETED", "ERROR", timeout=240)
    assert exp.state == "COMPLETED", exp
    trials = cluster.client.trials(exp_id)
    assert len(trials) == 6
    assert all(t.state == "COMPLETED" for t in trials)
    stopped = [t for t in trials if t.early_stopped]
    assert stopped, "ASHA stopped nobody"
    for trial in stopped:
        assert trial.steps_completed < 40
        assert any(ln.startswith("preempted at step") for ln in cluster.trial_logs(trial.id))


def test_the_core_api_example_runs_unchanged(cluster: Cluster) -> None:
    submitted = yaml.safe_load((EXAMPLES / "core_api.yaml").read_text())
    submitted["searcher"].update({"max_trials": 2, "max_length": {"batches": 20}})
    exp_id = cluster.submit(yaml.safe_dump(submitted), EXAMPLES)
    exp = cluster.wait_state(exp_id, "COMPLETED", "ERROR", timeout=240)
    assert exp.state == "COMPLETED", exp
    trials = cluster.client.trials(exp_id)
    assert trials and all(t.best_validation is not None for t in trials)
    assert any(t.steps_completed == 20 for t in trials)


# -- DDP under determined.launch.torch_distributed -----------------------------------------------

DDP_LENGTH = 12


@pytest.fixture
def torch_installed() -> None:
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed (pip install torch==2.13.0, or the dev extra)")


@pytest.fixture
def two_agents(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    c = Cluster(tmp_path / "home")
    c.start_master()
    c.start_agent("agent-1", slots=1)
    c.start_agent("agent-2", slots=1)
    yield from serve(c, request)


def run_ddp_example(cluster: Cluster) -> tuple[rest.TrialDetail, list[rest.LogEntry]]:
    submitted = yaml.safe_load((EXAMPLES / "ddp.yaml").read_text())
    assert submitted["entrypoint"].startswith("python3 -m determined.launch.torch_distributed")
    submitted["searcher"]["max_length"] = {"batches": DDP_LENGTH}
    exp_id = cluster.submit(yaml.safe_dump(submitted), EXAMPLES)
    exp = cluster.wait_state(exp_id, "COMPLETED", "ERROR", "CANCELED", timeout=300)
    trial = cluster.client.trial(int(only_trial(cluster, exp_id).id))
    logs = cluster.client.logs(int(trial.id))
    assert exp.state == "COMPLETED", [e.line for e in logs][-60:]
    return trial, logs


def assert_each_rank_once_with_the_same_parameters(
    logs: list[rest.LogEntry], nodes: int = 1
) -> None:
    ranks: list[int] = []
    digests: dict[int, str] = {}
    for entry in logs:
        line = str(entry.line)
        tag = f"[rank={entry.rank}] "
        if not line.startswith(tag):
            continue
        text = line[len(tag) :]
        if match := re.fullmatch(r"rank (\d+) of 2; allgather \[0, 1\]", text):
            assert int(match.group(1)) == entry.rank
            ranks.append(entry.rank)
        if match := re.fullmatch(rf"digest (\w+) at step {DDP_LENGTH}", text):
            assert entry.rank not in digests, f"rank {entry.rank} finished twice"
            digests[entry.rank] = match.group(1)
    assert sorted(ranks) == [0, 1], f"ranks started: {ranks}"
    announced = [e for e in logs if str(e.line) == ANNOUNCE]
    assert len(announced) == nodes, "said once a node, by the launcher, not again by each rank"
    assert sorted(digests) == [0, 1], digests
    assert digests[0] == digests[1], f"ranks ended with different parameters: {digests}"


@pytest.mark.usefixtures("torch_installed")
def test_ddp_under_the_torch_launcher_on_two_slots_of_one_agent(cluster: Cluster) -> None:
    trial, logs = run_ddp_example(cluster)
    assert_each_rank_once_with_the_same_parameters(logs)
    assert trial.steps_completed == DDP_LENGTH
    checkpoints = cluster.client.trial_checkpoints(int(trial.id))
    assert [c.steps_completed for c in checkpoints] == [4, 8, 12], "only the chief stores"


@pytest.mark.usefixtures("torch_installed")
def test_ddp_under_the_torch_launcher_on_two_agents(two_agents: Cluster) -> None:
    trial, logs = run_ddp_example(two_agents)
    assert_each_rank_once_with_the_same_parameters(logs, nodes=2)
    (allocation,) = trial.allocations
    assert sorted(allocation.slots) == ["agent-1", "agent-2"]
    assert allocation.exit_code == 0
