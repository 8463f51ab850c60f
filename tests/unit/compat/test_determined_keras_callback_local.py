"""``determined.keras.DeterminedCallback`` outside a cluster, imported as a trial imports it:
the iris example's script trains on ``det.core.init()``'s local stand-ins; a checkpoint whose
``continue_id`` matches continues at its next epoch and one whose ``continue_id`` differs is a
warm start; a preemption checkpoints and stops; what cannot be honoured is refused; and
``DistributedContext.from_tf_config()`` answers as Determined's does, two workers included."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from assay.compat import trial_pythonpath
from tests.integration.cluster import free_port
from tests.unit.compat.test_determined_shim import SRC, run_trial_code

if importlib.util.find_spec("tensorflow") is None:
    pytest.skip("tensorflow is not installed (pip install tensorflow)", allow_module_level=True)

IRIS = Path(__file__).resolve().parents[2] / "integration" / "contexts" / "keras_callback"


def lines(stdout: str, prefix: str) -> list[str]:
    return [line[len(prefix) :].strip() for line in stdout.splitlines() if line.startswith(prefix)]


def test_the_iris_script_trains_off_cluster_on_the_local_core_context(tmp_path: Path) -> None:
    code = f"""
        import runpy, sys
        sys.argv = ["train.py", "--epochs", "2"]
        runpy.run_path({str(IRIS / "train.py")!r}, run_name="__main__")
    """
    done = run_trial_code(code, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    # Off a cluster the metrics are logged, Keras's and fit()'s validation names both.
    assert "training metrics at step 16: {'categorical_accuracy'" in done.stderr
    assert "'val_categorical_accuracy'" in done.stderr.split("validation metrics at step 16")[1]
    assert "probe end iterations=16 " in done.stdout
    # The example's log-friendly progress lines replace Keras's progress bar.
    assert "total batches trained: 16, epoch 100% complete (8/8)" in done.stdout
    (ckpt,) = (tmp_path / "ckpt").iterdir()
    # Off a cluster no code is copied (assay's way for every framework).
    assert sorted(p.name for p in ckpt.iterdir()) == [
        "callback_state",
        "model_checkpoint.weights.h5",
    ]
    # Keras's own log_dir off a cluster, as Determined leaves it.
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == ["train", "validation"]


FITS = """
import json, os, pickle, re
import numpy as np
import keras
import determined as det
import determined.keras

x = np.linspace(-1, 1, 128, dtype="float32").reshape(32, 4)
y = np.ones((32, 2), dtype="float32")
saved = []

class Recording(det.keras.DeterminedCallback):
    def save_model(self, model, path, distributed):
        super().save_model(model, path, distributed)
        # The directory being written is named after the checkpoint's uuid.
        uuid = re.search(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", os.path.dirname(path))
        saved.append(uuid.group(0))

class Probe(keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        w = float(np.sum(self.model.get_weights()[0]))
        print("begin", int(self.model.optimizer.iterations), repr(w))
    def on_epoch_begin(self, epoch, logs=None):
        print("epoch", epoch)
    def on_train_end(self, logs=None):
        w = float(np.sum(self.model.get_weights()[0]))
        print("end", int(self.model.optimizer.iterations), repr(w))

def fit(checkpoint, continue_id, epochs, preempt_after=None, steps_per_execution=1, **kwargs):
    with det.core.init() as ctx:
        dense = keras.layers.Dense(2, kernel_initializer="zeros")
        model = keras.Sequential([keras.Input((4,)), dense])
        model.compile(
            optimizer=keras.optimizers.Adam(0.05), loss="mse",
            steps_per_execution=steps_per_execution,
        )
        cb = Recording(ctx, checkpoint=checkpoint, continue_id=continue_id, **kwargs)
        hooks = [cb, Probe()]
        if preempt_after is not None:
            hooks.insert(0, keras.callbacks.LambdaCallback(
                on_epoch_end=lambda e, logs: e == preempt_after and ctx.preempt._simulate()))
        model.fit(x, y, batch_size=8, epochs=epochs, callbacks=hooks, verbose=0,
                  validation_data=(x, y))
    # Off a cluster there is no master to keep metadata: the callback's own state says it.
    steps = [pickle.load(open(f"ckpt/{u}/callback_state", "rb"))["steps_completed"] for u in saved]
    print("saved", json.dumps(steps))
    uuids = list(saved)
    saved.clear()
    return uuids

def refused(what, make):
    try:
        make()
    except Exception as exc:
        print("refused", what, type(exc).__name__, str(exc).replace(chr(10), " "))
    else:
        print("accepted", what)

print("run fresh"); (first, second) = fit(None, "a", 2, checkpoint_epochs=1)
print("run continue"); fit(second, "a", 4, checkpoint_epochs=3)
print("run warm"); fit(second, "b", 1)
print("run preempted"); fit(None, "c", 5, preempt_after=1, checkpoint_epochs=0)
print("run executions"); fit(None, "d", 2, steps_per_execution=2, checkpoint_epochs=1)

print("run refusals")
with det.core.init() as ctx:
    make = lambda **kwargs: det.keras.DeterminedCallback(ctx, None, 1, **kwargs)
    refused("period", lambda: make(train_metrics_report_period="batch"))
    refused("period0", lambda: make(train_metrics_report_period=0))
    refused("epochs", lambda: make(checkpoint_epochs=-1))
    refused("model", lambda: make().set_model(object()))
    with ctx.checkpoint.store_path({"steps_completed": 4}) as (path, keras2):
        (path / "model_checkpoint.index").write_bytes(b"")
        (path / "model_checkpoint.data-00000-of-00001").write_bytes(b"")
    with ctx.checkpoint.store_path({"steps_completed": 4}) as (path, empty):
        (path / "notes.txt").write_text("no model here")
refused("keras2", lambda: fit(keras2, "a", 1))
refused("empty", lambda: fit(empty, "a", 1))
"""


def test_continue_warm_start_preemption_and_refusals_off_cluster(tmp_path: Path) -> None:
    done = run_trial_code(FITS, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    runs = {}
    for chunk in done.stdout.split("run ")[1:]:
        name, _, body = chunk.partition("\n")
        runs[name] = body.splitlines()
    # 4 batches an epoch; a checkpoint every epoch.
    fresh = runs["fresh"]
    assert fresh[:3] == ["begin 0 0.0", "epoch 0", "epoch 1"] and fresh[-1] == "saved [4, 8]"
    end_of_fresh = fresh[-2].split()
    # Same continue_id: epoch 2 on, from the saved weights, optimizer step and step count; the
    # run's end (epoch 3) is saved though checkpoint_epochs=3 does not fall there.
    cont = runs["continue"]
    assert cont[0] == f"begin 8 {end_of_fresh[2]}"
    assert cont[1:3] == ["epoch 2", "epoch 3"] and "epoch 0" not in cont
    assert cont[-2].startswith("end 16 ") and cont[-1] == "saved [12, 16]"
    # Another continue_id: the weights (and optimizer state) of the checkpoint, from epoch 0
    # and step 0.
    warm = runs["warm"]
    assert warm[:2] == [f"begin 8 {end_of_fresh[2]}", "epoch 0"] and warm[-1] == "saved [4]"
    # Preempted after epoch 1 with checkpoint_epochs=0: saved at once, and no more epochs.
    preempted = runs["preempted"]
    assert [e for e in preempted if e.startswith("epoch")] == ["epoch 0", "epoch 1"]
    assert preempted[-1] == "saved [8]"
    # Two batches a call of on_train_batch_end: still 4 batches an epoch.
    executions = runs["executions"]
    assert executions[-2].startswith("end 8 ") and executions[-1] == "saved [4, 8]"

    refusals = {line.split()[0]: line for line in lines(done.stdout, "refused ")}
    assert not lines(done.stdout, "accepted "), done.stdout
    assert 'ValueError train_metrics_report_period must be "epoch"' in refusals["period"]
    assert "got 'batch'" in refusals["period"] and "got 0" in refusals["period0"]
    assert "checkpoint_epochs must be 0 or more" in refusals["epochs"]
    assert "TypeError DeterminedCallback is a Keras 3 callback" in refusals["model"]
    assert "TensorFlow's checkpoint format (Keras 2's save_weights)" in refusals["keras2"]
    assert "model_checkpoint.weights.h5" in refusals["keras2"]
    assert (
        "FileNotFoundError the checkpoint has no model_checkpoint.weights.h5" in refusals["empty"]
    )


TF_CONFIG = """
import json, os
import tensorflow as tf
from determined.core import DistributedContext

def show(label):
    try:
        dist, strategy = DistributedContext.from_tf_config()
    except Exception as exc:
        print(label, "refused", type(exc).__name__, exc)
        return
    default = strategy is tf.distribute.get_strategy()
    print(label, dist.rank, dist.size, dist.local_rank, dist.local_size, dist.cross_rank,
          dist.cross_size, type(dist).__name__, "default" if default else type(strategy).__name__)

show("none")
os.environ["TF_CONFIG"] = json.dumps(
    {"cluster": {"worker": ["127.0.0.1:29999"]}, "task": {"type": "worker", "index": 0}})
show("one")
os.environ["TF_CONFIG"] = json.dumps(
    {"cluster": {"chief": ["a:1"], "worker": ["b:1"]}, "task": {"type": "chief", "index": 0}})
show("chief")
os.environ["TF_CONFIG"] = "{not json"
show("broken")
"""


def test_from_tf_config_with_no_tf_config_or_one_worker_is_one_rank_on_the_default_strategy(
    tmp_path: Path,
) -> None:
    done = run_trial_code(TF_CONFIG, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    found = {line.split()[0]: line.split(None, 1)[1] for line in done.stdout.splitlines()}
    assert found["none"] == "0 1 0 1 0 1 DistributedContext default"
    assert found["one"] == "0 1 0 1 0 1 DistributedContext default"
    assert found["chief"].startswith("refused RuntimeError DistributedContext.from_tf_config() ")
    assert "task type 'chief' where it should be 'worker'" in found["chief"]
    assert found["broken"].startswith("refused ValueError TF_CONFIG must be JSON")


WORKER = """
import numpy as np
import keras
import logging
import determined as det
import determined.keras

logging.basicConfig(level=logging.INFO)
distributed, strategy = det.core.DistributedContext.from_tf_config()
print("rank", distributed.rank, distributed.size, distributed.cross_rank, distributed.cross_size,
      distributed.chief_ip, type(strategy).__name__, flush=True)
# Keras 3 cannot fit() under MultiWorkerMirroredStrategy (keras-team/keras#20585), so each rank
# trains its own copy: what is checked is the callback's part on each rank.
with det.core.init(distributed=distributed) as ctx:
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    cb = det.keras.DeterminedCallback(ctx, checkpoint=None, continue_id=1)
    x = np.ones((32, 4), dtype="float32")
    model.fit(x, x[:, :1], batch_size=8, epochs=2, callbacks=[cb], verbose=0,
              validation_data=(x, x[:, :1]))
print("done", distributed.rank, flush=True)
"""


def test_two_workers_are_two_ranks_and_only_the_chief_reports_and_keeps_checkpoints(
    tmp_path: Path,
) -> None:
    workers = [f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"]
    rendezvous = str(free_port())
    procs: list[subprocess.Popen[bytes]] = []
    logs = [(tmp_path / f"out{i}", tmp_path / f"err{i}") for i in range(2)]
    try:
        for index, (out, err) in enumerate(logs):
            env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
            tf_config = {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}
            env.update(
                PYTHONPATH=trial_pythonpath(str(SRC)),
                ASSAY_CHECKPOINT_DIR=str(tmp_path / "ckpt"),
                ASSAY_RENDEZVOUS_PORT=rendezvous,
                TF_CONFIG=json.dumps(tf_config),
            )
            with out.open("wb") as stdout, err.open("wb") as stderr:
                procs.append(
                    subprocess.Popen(
                        [sys.executable, "-c", WORKER],
                        cwd=tmp_path,
                        env=env,
                        stdout=stdout,
                        stderr=stderr,
                    )
                )
        codes = [proc.wait(timeout=90) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    outputs = [(out.read_text(), err.read_text()) for out, err in logs]
    assert codes == [0, 0], [err[-3000:] for _, err in outputs]
    (chief, chief_log), (worker, worker_log) = outputs
    # MultiWorkerMirroredStrategy's class is CollectiveAllReduceStrategy.
    assert "rank 0 2 0 2 127.0.0.1 CollectiveAllReduceStrategy" in chief
    assert "rank 1 2 1 2 127.0.0.1 CollectiveAllReduceStrategy" in worker
    # Off a cluster reports are logged: by the chief alone.
    assert "validation metrics at step 4" in chief_log
    assert "metrics at step" not in worker_log
    # Every epoch's checkpoint, stored by both ranks together, holds the chief's files alone.
    checkpoints = list((tmp_path / "ckpt").iterdir())
    assert len(checkpoints) == 2
    for ckpt in checkpoints:
        assert sorted(p.name for p in ckpt.iterdir()) == [
            "callback_state",
            "model_checkpoint.weights.h5",
        ]
