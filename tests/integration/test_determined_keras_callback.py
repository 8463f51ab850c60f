"""Determined's Keras callback API on a real cluster: the iris example's ``train.py`` (its model,
``DeterminedCallback`` and ``TensorBoard``, under ``determined.launch.tensorflow``) trains to
completion with its metrics, checkpoint and TensorBoard files where Determined keeps them, and
a pause checkpoints it mid-training and an activation continues it at the next epoch with the
model's and optimizer's state as they were saved."""

from __future__ import annotations

import importlib.util
import pickle
from pathlib import Path
from typing import Any

import pytest
import yaml

from assay import rest
from tests.integration.cluster import CONTEXTS, Cluster, wait_for

pytestmark = pytest.mark.integration

if importlib.util.find_spec("tensorflow") is None:
    pytest.skip("tensorflow is not installed (pip install tensorflow)", allow_module_level=True)

CONTEXT = CONTEXTS / "keras_callback"
BATCHES_PER_EPOCH = 8
"""120 records at a global batch size of 16."""


def config(storage: Path, epochs: int, **hparams: Any) -> dict[str, Any]:
    return {
        "name": "iris-keras-callback",
        "entrypoint": (
            f"python3 -m determined.launch.tensorflow -- python3 train.py --epochs {epochs}"
        ),
        "hyperparameters": {
            "learning_rate": 0.01,
            "learning_rate_decay": 1.0e-6,
            "layer1_dense_size": 16,
            "global_batch_size": 16,
            "verbose": 0,
            **hparams,
        },
        "searcher": {
            "name": "single",
            "metric": "val_categorical_accuracy",
            "smaller_is_better": False,
        },
        "checkpoint_storage": {"type": "shared_fs", "host_path": str(storage)},
        "max_restarts": 0,
    }


def probes(cluster: Cluster, trial_id: int) -> list[dict[str, str]]:
    """What the probe callback printed, one dict per line: ``begin``/``end`` lines with the
    optimizer's iterations and the checksums, ``first_epoch`` lines."""
    found = []
    for line in cluster.trial_logs(trial_id):
        if not line.startswith("probe "):
            continue
        kind, *pairs = line.split()[1:]
        entry = dict(pair.split("=", 1) for pair in pairs if "=" in pair)
        entry["kind"] = kind.split("=")[0]
        if kind.startswith("first_epoch="):
            entry["first_epoch"] = kind.split("=", 1)[1]
        found.append(entry)
    return found


def finish(cluster: Cluster, exp_id: int, timeout: float = 120) -> rest.Trial:
    exp = cluster.wait_state(exp_id, "COMPLETED", "ERROR", "CANCELED", timeout=timeout)
    (trial,) = cluster.client.trials(exp_id)
    assert exp.state == "COMPLETED", "\n".join(cluster.trial_logs(int(trial.id))[-60:])
    return trial


def test_the_iris_example_trains_reports_checkpoints_and_ranks_by_its_searcher_metric(
    cluster: Cluster, tmp_path: Path
) -> None:
    storage = tmp_path / "storage"
    epochs = 3
    exp_id = cluster.submit(yaml.safe_dump(config(storage, epochs)), CONTEXT)
    trial = finish(cluster, exp_id)
    tid = int(trial.id)

    steps = [BATCHES_PER_EPOCH * e for e in range(1, epochs + 1)]
    training = cluster.client.metrics(tid, "training")
    assert [m.steps_completed for m in training] == steps
    for epoch, report in enumerate(training, start=1):
        assert (
            report.metrics["epochs"] == epoch
            and report.metrics["batches"] == report.steps_completed
        )
        assert {"loss", "categorical_accuracy"} <= set(report.metrics)
        assert not any(name.startswith("val_") for name in report.metrics)
    validation = cluster.client.metrics(tid, "validation")
    assert [m.steps_completed for m in validation] == steps
    for report in validation:
        values = report.metrics
        # Keras's names (Determined's) and fit()'s val_ names, the same values.
        assert values["val_categorical_accuracy"] == values["categorical_accuracy"]
        assert values["val_loss"] == values["loss"]
    last = validation[-1].metrics["val_categorical_accuracy"]
    best = max(r.metrics["val_categorical_accuracy"] for r in validation)
    assert trial.best_validation == pytest.approx(best) and last > 0.5

    # checkpoint_epochs=0, as in the example: one checkpoint, when training ends.
    (ckpt,) = cluster.client.trial_checkpoints(tid)
    assert ckpt.steps_completed == steps[-1] and trial.latest_checkpoint == ckpt.uuid
    assert {"model_checkpoint.weights.h5", "callback_state", "code/train.py"} <= set(ckpt.resources)
    state = pickle.loads((storage / ckpt.uuid / "callback_state").read_bytes())
    assert state == {
        "epoch": epochs - 1,
        "steps_completed": steps[-1],
        "continue_id": tid,
        "training_length": BATCHES_PER_EPOCH,
        "validation_length": 2,
    }
    # det.keras.TensorBoard wrote into the trial's directory, which reached the storage.
    events = [p.parent.name for p in (storage / "tensorboard").rglob("events.out.tfevents.*")]
    assert {"train", "validation"} <= set(events)
    assert cluster.client.trial(tid).progress == pytest.approx(1.0)


def test_a_pause_checkpoints_mid_training_and_activate_continues_at_the_next_epoch(
    cluster: Cluster, tmp_path: Path
) -> None:
    storage = tmp_path / "storage"
    epochs = 12
    exp_id = cluster.submit(yaml.safe_dump(config(storage, epochs, epoch_seconds=0.5)), CONTEXT)
    tid = wait_for("the trial to start", lambda: cluster.client.trials(exp_id))[0].id

    def trained() -> int:
        reports = cluster.client.metrics(tid, "training")
        return reports[-1].steps_completed if reports else 0

    wait_for("two epochs", lambda: trained() >= 2 * BATCHES_PER_EPOCH, timeout=90)
    cluster.client.transition(exp_id, "pause")
    cluster.wait_state(exp_id, "PAUSED")
    paused = wait_for(
        "the trial to stop", lambda: (t := cluster.client.trial(tid)).state == "PAUSED" and t
    )
    (saved,) = cluster.client.trial_checkpoints(tid)
    assert paused.latest_checkpoint == saved.uuid
    paused_epochs, rest_ = divmod(saved.steps_completed, BATCHES_PER_EPOCH)
    assert rest_ == 0 and 2 <= paused_epochs < epochs, saved.steps_completed

    cluster.client.transition(exp_id, "activate")
    trial = finish(cluster, exp_id)
    assert trial.restarts == 0, "a pause is not a failure"

    # Each epoch reported once: the resumed run went on from the paused one's step count.
    steps = [BATCHES_PER_EPOCH * e for e in range(1, epochs + 1)]
    training = cluster.client.metrics(tid, "training")
    assert [m.steps_completed for m in training] == steps
    assert [m.metrics["epochs"] for m in training] == list(range(1, epochs + 1))
    assert [m.steps_completed for m in cluster.client.metrics(tid, "validation")] == steps
    assert [c.steps_completed for c in cluster.client.trial_checkpoints(tid)] == [
        saved.steps_completed,
        steps[-1],
    ]

    first, second = [p for p in probes(cluster, int(tid)) if p["kind"] == "first_epoch"]
    assert first["first_epoch"] == "0"
    assert second["first_epoch"] == str(paused_epochs), "it did not restart from epoch 0"
    begins = [p for p in probes(cluster, int(tid)) if p["kind"] == "begin"]
    ends = [p for p in probes(cluster, int(tid)) if p["kind"] == "end"]
    assert len(begins) == len(ends) == 2
    # The second run began with exactly the weights and optimizer state the first one saved.
    assert begins[1] == {**ends[0], "kind": "begin"}
    assert int(begins[1]["iterations"]) == saved.steps_completed
    assert int(ends[1]["iterations"]) == steps[-1]
