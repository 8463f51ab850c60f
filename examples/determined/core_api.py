"""A Determined Core API script: handwritten digits (scikit-learn) classified by a linear model
trained with SGD, one mini-batch per step. It uses only Determined's API (``import determined
as det``) and runs unchanged under assay.

It reports training and validation metrics, checkpoints every ``checkpoint_every`` steps,
resumes from the latest checkpoint, and checkpoints and exits when asked to stop (pause,
preemption, or ASHA stopping it). Two ways to decide how long to train:

- the searcher's operations (configs with ``max_length``): train to each operation's length,
  then validate and report the searcher metric;
- ``max_batches`` in the hyperparameters (configs with ``time_metric: batches``): train that
  many batches, validating every ``validate_every`` with the step count as ``batches``, until
  done or told to stop.

Run it outside a cluster too: ``python3 core_api.py`` trains with the default hyperparameters.
"""

from __future__ import annotations

import logging
import os
import pickle
from pathlib import Path
from typing import Any

import determined as det
import numpy as np
from determined import core
from sklearn.datasets import load_digits
from sklearn.linear_model import SGDClassifier
from sklearn.model_selection import train_test_split

DEFAULTS: dict[str, Any] = {
    "learning_rate": 0.01,
    "alpha": 0.0001,
    "batch_size": 32,
    "checkpoint_every": 10,
    "validate_every": 10,
}


class Trainer:
    def __init__(self, hparams: dict[str, Any], seed: int) -> None:
        x, y = load_digits(return_X_y=True)
        x = x / 16.0
        self.x_train, self.x_val, self.y_train, self.y_val = train_test_split(
            x, y, test_size=0.25, random_state=0
        )
        self.classes = np.unique(y)
        self.batch_size = int(hparams["batch_size"])
        self.rng = np.random.default_rng(seed)
        self.model = SGDClassifier(
            loss="log_loss",
            learning_rate="constant",
            eta0=float(hparams["learning_rate"]),
            alpha=float(hparams["alpha"]),
            random_state=seed,
        )
        self.steps = 0

    def train_batch(self) -> float:
        pick = self.rng.choice(len(self.x_train), self.batch_size, replace=False)
        self.model.partial_fit(self.x_train[pick], self.y_train[pick], classes=self.classes)
        self.steps += 1
        return float(1.0 - self.model.score(self.x_train[pick], self.y_train[pick]))

    def validation_error(self) -> float:
        return float(1.0 - self.model.score(self.x_val, self.y_val))

    def save(self, path: Path) -> None:
        state = {"model": self.model, "steps": self.steps, "rng": self.rng}
        (path / "state.pkl").write_bytes(pickle.dumps(state))

    def load(self, path: Path) -> None:
        state = pickle.loads((path / "state.pkl").read_bytes())
        self.model, self.steps, self.rng = state["model"], state["steps"], state["rng"]


def main(core_context: core.Context) -> None:
    info = det.get_cluster_info()
    hparams = {**DEFAULTS, **(info.trial.hparams if info and info.trial else {})}
    trainer = Trainer(hparams, seed=info.trial.trial_seed % 2**31 if info and info.trial else 0)
    if info is not None and info.latest_checkpoint is not None:
        with core_context.checkpoint.restore_path(info.latest_checkpoint) as path:
            trainer.load(path)
    run = info.trial.trial_run_id if info and info.trial else 1
    print(f"started at step {trainer.steps} run {run} pid {os.getpid()}", flush=True)

    def checkpoint() -> None:
        with core_context.checkpoint.store_path({"steps_completed": trainer.steps}) as (path, _):
            trainer.save(path)

    def train_step() -> bool:
        """One batch; False once the trial was told to stop (its checkpoint is written)."""
        loss = trainer.train_batch()
        core_context.train.report_training_metrics(trainer.steps, {"loss": loss})
        if trainer.steps % int(hparams["checkpoint_every"]) == 0:
            checkpoint()
        if core_context.preempt.should_preempt():
            checkpoint()
            print(f"preempted at step {trainer.steps}", flush=True)
            return False
        return True

    if hparams.get("max_batches") is not None:
        while trainer.steps < int(hparams["max_batches"]):
            if not train_step():
                return
            if trainer.steps % int(hparams["validate_every"]) == 0:
                metrics = {"validation_error": trainer.validation_error(), "batches": trainer.steps}
                core_context.train.report_validation_metrics(trainer.steps, metrics)
        if trainer.steps % int(hparams["checkpoint_every"]):
            checkpoint()
        print(f"done at step {trainer.steps}", flush=True)
        return

    for op in core_context.searcher.operations():
        while trainer.steps < op.length:
            if not train_step():
                return
            op.report_progress(trainer.steps)
        error = trainer.validation_error()
        core_context.train.report_validation_metrics(trainer.steps, {"validation_error": error})
        op.report_completed(error)
    if trainer.steps % int(hparams["checkpoint_every"]):
        checkpoint()
    print(f"done at step {trainer.steps}", flush=True)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    with det.core.init() as core_context:
        main(core_context)
