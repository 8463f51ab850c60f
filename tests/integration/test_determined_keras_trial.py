"""Determined's ``TFKerasTrial`` on a real cluster, trained through a legacy
``entrypoint: model_def:OneVarTrial``: a one-weight model whose weight after every plain SGD
step is known in closed form (``w_k = 1 - (1 - 2 lr)^k``), with the config's periods and its
callbacks' hooks in Determined's order, paused and resumed at the exact batch, stopped early by
ASHA, loaded back from its checkpoint, and refused on several slots."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.cluster import CONTEXTS, Cluster, wait_for
from tests.integration.trial_runs import merged, run_trial

pytestmark = pytest.mark.integration

if importlib.util.find_spec("tensorflow") is None:
    pytest.skip("tensorflow is not installed (pip install tensorflow)", allow_module_level=True)

import numpy as np  # noqa: E402

CONTEXT = CONTEXTS / "keras_trial"


def weights(steps: int, lr: float) -> list[float]:
    """The weight before each step and after the last, in float32 as Keras computes it:
    the gradient of (w - 1)^2 is 2(w - 1)."""
    w = np.float32(0.0)
    out = [float(w)]
    for _ in range(steps):
        w = np.float32(w - np.float32(lr) * (np.float32(2) * (w - np.float32(1))))
        out.append(float(w))
    return out


def mean_loss(ws: list[float], first: int, end: int) -> float:
    """The training loss Keras reports over batches ``first``..``end - 1``: the mean of
    (w - 1)^2 before each."""
    return sum((ws[b] - 1) ** 2 for b in range(first, end)) / (end - first)


def config(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "keras-trial",
        "entrypoint": "model_def:OneVarTrial",
        "hyperparameters": {"global_batch_size": 8, "lr": 0.05},
        "searcher": {
            "name": "single",
            "metric": "val_loss",
            "smaller_is_better": True,
            "max_length": {"batches": 12},
        },
        "max_restarts": 0,
    }
    return merged(base, overrides)


def runs(cluster: Cluster, trial_id: int) -> list[tuple[float, list[str]]]:
    """Each run of the trial's process: its final weight and the hooks it recorded."""
    found: list[tuple[float, list[str]]] = []
    weight = None
    for line in cluster.trial_logs(trial_id):
        if line.startswith("run ") and " final weight " in line:
            weight = float(line.split(" final weight ")[1])
        elif line.startswith("hooks "):
            assert weight is not None
            found.append((weight, line.split()[1:]))
    return found


def test_a_keras_trial_trains_with_the_configs_periods_hooks_and_loads_back(
    cluster: Cluster, tmp_path: Path
) -> None:
    storage = tmp_path / "storage"
    storage.mkdir()
    submitted = config(
        records_per_epoch=32,
        scheduling_unit=3,
        min_validation_period={"batches": 6},
        min_checkpoint_period={"records": 40},
        perform_initial_validation=True,
        checkpoint_policy="none",
        checkpoint_storage={"type": "shared_fs", "host_path": str(storage)},
    )
    trial = run_trial(cluster, submitted, CONTEXT)
    tid = int(trial.id)
    ws = weights(12, 0.05)
    assert trial.steps_completed == 12
    ((final, events),) = runs(cluster, tid)
    assert final == pytest.approx(ws[12], abs=1e-6)
    # Workloads end at the scheduling unit (3), the checkpoint period (40 records: every 5
    # batches), the validation period (6) and the searcher's length (12).
    training = cluster.client.metrics(tid, "training")
    ends = [m.steps_completed for m in training]
    assert ends == [3, 5, 6, 9, 10, 12]
    for start, report in zip([0, *ends], training, strict=False):
        end = report.steps_completed
        assert report.metrics["loss"] == pytest.approx(mean_loss(ws, start, end), abs=1e-6)
        assert report.metrics["batches"] == end and report.metrics["epochs"] == end // 4
    validation = cluster.client.metrics(tid, "validation")
    assert [m.steps_completed for m in validation] == [0, 6, 12]
    for report in validation:
        assert report.metrics["val_loss"] == pytest.approx(
            (ws[report.steps_completed] - 1) ** 2, abs=1e-6
        )
    checkpoints = cluster.client.trial_checkpoints(tid)
    assert [c.steps_completed for c in checkpoints] == [5, 10, 12]
    # Determined's order: validation and checkpoints between workloads, epochs (4 batches
    # of records_per_epoch 32) inside them.
    assert events == [
        "train_begin", "test_begin", "test_end:0",
        "epoch_begin:0", "workload_begin:0:3", "workload_end:3",
        "workload_begin:3:2", "epoch_end:0", "epoch_begin:1", "workload_end:5", "checkpoint_end",
        "workload_begin:5:1", "workload_end:6", "test_begin", "test_end:6",
        "workload_begin:6:3", "epoch_end:1", "epoch_begin:2", "workload_end:9",
        "workload_begin:9:1", "workload_end:10", "checkpoint_end",
        "workload_begin:10:2", "epoch_end:2", "workload_end:12", "test_begin", "test_end:12",
        "checkpoint_end", "train_end",
    ]  # fmt: skip
    last = storage / str(checkpoints[-1].uuid)
    assert (last / "determined-keras-model-weights.weights.h5").exists()
    assert (last / "determined-keras-optimizer-weights.h5").exists()
    for name in ("rng_state.pkl", "determined-callbacks.v1.pkl", "workload_sequencer.pkl"):
        assert (last / name).exists(), name
    assert (last / "code" / "model_def.py").exists()
    loaded = load_weight(last, tmp_path)
    assert loaded == pytest.approx(ws[12], abs=1e-6)


def load_weight(checkpoint: Path, cwd: Path) -> float:
    from assay.compat import SHIMS_DIR

    code = textwrap.dedent(
        f"""
        from determined import keras
        model = keras.load_model_from_checkpoint_path({str(checkpoint)!r})
        print("weight", float(model.get_weights()[0].reshape(-1)[0]))
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    env["PYTHONPATH"] = f"{SHIMS_DIR}:{env.get('PYTHONPATH', '')}"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("weight ")]
    return float(line.split()[1])


def test_pause_and_activate_resume_at_the_exact_batch(cluster: Cluster) -> None:
    length, lr = 120, 0.01
    submitted = config(
        hyperparameters={"lr": lr, "step_seconds": 0.04},
        searcher={"max_length": {"batches": length}},
        records_per_epoch=64,
        scheduling_unit=5,
        min_checkpoint_period={"batches": 40},
        min_validation_period={"batches": 60},
    )
    exp_id = cluster.submit(yaml.safe_dump(submitted), CONTEXT)
    tid = wait_for("the trial to start", lambda: cluster.client.trials(exp_id))[0].id

    def trained() -> int:
        if cluster.client.trial(tid).state == "ERROR":
            raise AssertionError("\n".join(cluster.trial_logs(tid)[-40:]))
        reports = cluster.client.metrics(tid, "training")
        return reports[-1].steps_completed if reports else 0

    wait_for("training", lambda: trained() >= 15, timeout=120)
    cluster.client.transition(exp_id, "pause")
    cluster.wait_state(exp_id, "PAUSED")
    paused = wait_for(
        "the trial to stop", lambda: (t := cluster.client.trial(tid)).state == "PAUSED" and t
    )
    paused_at = cluster.client.checkpoint(str(paused.latest_checkpoint)).steps_completed
    assert 15 <= paused_at < length and paused_at % 5 == 0
    time.sleep(0.5)
    cluster.client.transition(exp_id, "activate")
    exp = cluster.wait_state(exp_id, "COMPLETED", "ERROR", timeout=180)
    assert exp.state == "COMPLETED", cluster.trial_logs(tid)[-40:]
    trial = cluster.client.trial(tid)
    assert trial.steps_completed == length and trial.restarts == 0
    ws = weights(length, lr)
    (first, first_events), (second, second_events) = runs(cluster, tid)
    assert first == pytest.approx(ws[paused_at], abs=1e-6)
    assert first_events[-2:] == ["checkpoint_end", "train_end"], "checkpointed on the pause"
    assert second == pytest.approx(ws[length], abs=1e-6), "as if never paused"
    # The resumed run began at the paused checkpoint's batch, with the callback's state.
    assert second_events[:2] == ["train_begin", "load_state:1"]
    workloads = [e for e in second_events if e.startswith("workload_begin:")]
    assert workloads[0] == f"workload_begin:{paused_at}:5"
    reports = cluster.client.metrics(tid, "training")
    assert [m.steps_completed for m in reports] == list(range(5, length + 1, 5))
    for report in reports:
        end = report.steps_completed
        assert report.metrics["loss"] == pytest.approx(mean_loss(ws, end - 5, end), abs=1e-6)


def test_asha_stops_keras_trials_early(cluster: Cluster) -> None:
    submitted = config(
        hyperparameters={"lr": {"type": "double", "minval": 0.001, "maxval": 0.2}},
        records_per_epoch=64,
        searcher={
            "name": "adaptive_asha",
            "max_length": {"batches": 8},
            "max_trials": 3,
            "divisor": 2,
            "max_rungs": 2,
            "mode": "aggressive",
            "max_concurrent_trials": 2,
        },
        scheduling_unit=2,
    )
    exp_id = cluster.submit(yaml.safe_dump(submitted), CONTEXT)
    exp = cluster.wait_state(exp_id, "COMPLETED", "ERROR", timeout=240)
    assert exp.state == "COMPLETED", exp
    trials = cluster.client.trials(exp_id)
    assert len(trials) == 3 and all(t.state == "COMPLETED" for t in trials)
    assert any(t.steps_completed == 8 for t in trials), "the best went the whole way"
    stopped = [t for t in trials if t.steps_completed < 8]
    assert stopped and all(t.steps_completed == 4 for t in stopped), "stopped at the rung"


def test_a_keras_trial_on_several_slots_is_refused_at_submission(
    cluster: Cluster, tmp_path: Path
) -> None:
    submitted = config(resources={"slots_per_trial": 2}, records_per_epoch=64)
    path = tmp_path / "two-slots.yaml"
    path.write_text(yaml.safe_dump(submitted))
    done = cluster.cli("experiment", "create", str(path), str(CONTEXT))
    assert done.returncode != 0
    assert "resources.slots_per_trial: model_def.py imports determined.keras" in done.stderr
    assert "assay trains a TFKerasTrial on one slot" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    listed = json.loads(cluster.cli("experiment", "list", "--json", check=True).stdout)
    assert listed["experiments"] == [], "nothing was created"
