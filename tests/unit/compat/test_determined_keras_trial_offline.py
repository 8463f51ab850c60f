"""``determined.keras.TFKerasTrial`` outside a cluster, imported as a trial imports it: the
harness refuses it in one line without loading torch, the Sequence order a resumed trial
continues, Determined's stateful callbacks, and the refusals of what cannot work, through the
Keras controller run against an offline Core API context."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from assay.protocol import FAILURE_PREFIX
from tests.unit.compat.test_determined_shim import run_trial_code

if importlib.util.find_spec("tensorflow") is None:
    pytest.skip("tensorflow is not installed", allow_module_level=True)

CONTEXT = Path(__file__).resolve().parents[2] / "integration" / "contexts" / "keras_trial"


def test_the_harness_outside_a_cluster_refuses_a_keras_trial_without_loading_torch(
    tmp_path: Path,
) -> None:
    done = run_trial_code(
        """
        import sys
        from determined.exec import harness
        code = harness.main("model_def:OneVarTrial")
        assert code == 1, code
        assert "determined.keras" in sys.modules
        assert "torch" not in sys.modules, "a Keras trial loaded torch"
        """,
        tmp_path,
        extra_path=str(CONTEXT),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (line,) = [x for x in done.stderr.splitlines() if x.startswith(FAILURE_PREFIX)]
    assert "trains model_def:OneVarTrial on a cluster only: submit the experiment" in line
    assert "Traceback" not in done.stderr


OFFLINE = """
import pathlib
import keras
import numpy as np
import tensorflow as tf
import assay.core
from assay.core import (
    CheckpointContext, DistributedContext, PreemptContext, SearcherContext, TrainContext,
)
from determined import keras as det_keras
from determined.keras import _data
from determined.keras._controller import TFKerasTrialController

import model_def

# The Sequence order: a resumed sampler continues exactly where an uninterrupted one was.
whole = _data._Sampler(5, shuffle=True, seed=3, skip=0)
order = [i for _ in range(4) for i in whole.epoch()]
for skip in (0, 3, 5, 7, 13):
    resumed = _data._Sampler(5, shuffle=True, seed=3, skip=skip)
    tail = [i for _ in range(4) for i in resumed.epoch()][: len(order) - skip]
    assert tail == order[skip:], (skip, tail, order[skip:])
assert sorted(order[:5]) == list(range(5)) and order[:5] != order[5:10]
print("ok sampler")

reported = {"training": [], "validation": []}

class Train(TrainContext):
    def report_training_metrics(self, steps_completed, metrics, batch_metrics=None):
        reported["training"].append(steps_completed)
    def report_validation_metrics(self, steps_completed, metrics):
        reported["validation"].append((steps_completed, metrics["val_loss"]))

def run(trial_class, config, length, hparams=None):
    dist = DistributedContext()
    store = pathlib.Path("store").absolute()
    store.mkdir(exist_ok=True)
    core = assay.core.Context(
        info=None,
        train=Train(None, None, None, dist),
        checkpoint=CheckpointContext(None, None, {"type": "shared_fs", "host_path": str(store)}),
        preempt=PreemptContext(None, "", dist),
        searcher=SearcherContext(None, None, length, dist),
        distributed=dist,
        session=None,
    )
    base = {"searcher": {"metric": "val_loss", "max_length": {"batches": length}}}
    context = det_keras.TFKerasTrialContext(
        core, hparams=hparams or {"global_batch_size": 8, "lr": 0.05},
        exp_conf={**base, **config}, trial_seed=1, steps_completed=0, managed_training=True,
    )
    trial = trial_class(context)
    TFKerasTrialController.from_trial(trial, context, None).run()
    return trial, context

def refused(trial_class, config, says):
    try:
        run(trial_class, config, 2)
    except det_keras.InvalidExperimentException as exc:
        assert says in str(exc), str(exc)
    else:
        raise AssertionError(f"not refused: {says}")

# A Determined callback with on_epoch_end needs records_per_epoch.
refused(model_def.OneVarTrial, {}, "Hooks defines on_epoch_end, which needs records_per_epoch")

class Unwrapped(model_def.OneVarTrial):
    def build_training_data_loader(self):
        return tf.data.Dataset.from_tensor_slices((np.ones((8, 1)), np.ones((8, 1)))).batch(4)

refused(Unwrapped, {"records_per_epoch": 8}, "wrap each tf.data.Dataset")

class NotCompiled(model_def.OneVarTrial):
    def build_model(self):
        return self.context.wrap_model(keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)]))

refused(NotCompiled, {"records_per_epoch": 8}, "must compile its model")
print("ok refusals")

# EarlyStopping watches validations, stops the trial (checkpointed), and keeps its state.
class Stopping(model_def.OneVarTrial):
    def build_training_data_loader(self):
        data = tf.data.Dataset.from_tensor_slices((np.ones((8, 1)), np.ones((8, 1)))).batch(8)
        return self.context.wrap_dataset(data)
    def keras_callbacks(self):
        self.stop = det_keras.callbacks.EarlyStopping(monitor="val_loss", patience=1, mode="max")
        self.plateau = det_keras.callbacks.ReduceLROnPlateau(
            monitor="val_loss", patience=0, factor=0.5, mode="max"
        )
        return [self.stop, self.plateau]

reported["validation"].clear()
trial, context = run(Stopping, {"min_validation_period": {"batches": 1}, "scheduling_unit": 1}, 50)
# val_loss falls every step, which mode="max" takes as no improvement after the first:
# patience 1 stops the trial at the second validation, where ReduceLROnPlateau halves the rate.
steps = [s for s, _ in reported["validation"]]
assert steps == [1, 2], steps
assert context.get_stop_requested()
assert trial.stop.get_state()["wait"] == 1 and trial.stop.get_state()["test_end_count"] == 2
lr = float(trial.context.model.optimizer.learning_rate.numpy())
assert abs(lr - 0.05 / 2) < 1e-7, lr
fresh = det_keras.callbacks.EarlyStopping(monitor="val_loss")
fresh.load_state(trial.stop.get_state())
assert fresh.wait == 1 and fresh.best == trial.stop.best
saved = sorted(p.name for p in next(pathlib.Path("store").iterdir()).iterdir())
assert "determined-keras-model-weights.weights.h5" in saved, saved
print("ok callbacks")
"""


def test_the_keras_controller_offline(tmp_path: Path) -> None:
    done = run_trial_code(OFFLINE, tmp_path, extra_path=str(CONTEXT))
    assert done.returncode == 0, done.stderr[-4000:]
    for what in ("sampler", "refusals", "callbacks"):
        assert f"ok {what}" in done.stdout
