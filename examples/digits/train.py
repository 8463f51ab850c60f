"""A small neural network on scikit-learn's bundled digits, trained under assay's Core API.

It is searcher-driven: the searcher says how many batches to train to (``op.length``); the script
trains, validates, reports the searcher metric, and checkpoints. When the master asks it to stop
(a pause, or the scheduler wanting the slot) it checkpoints at the end of the current batch and
exits; run again, it resumes from that checkpoint. Off-cluster (``python3 train.py``) it trains
one short operation with default hyperparameters.
"""

from __future__ import annotations

import json
import logging
import pathlib
from typing import Any

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import assay

DEFAULTS = {"learning_rate": 0.1, "hidden_size": 64, "batch_size": 32, "weight_decay": 1e-4}
REPORT_EVERY = 25


class MLP:
    """One hidden layer with ReLU, softmax output, SGD with momentum."""

    def __init__(self, hidden: int, rng: np.random.Generator) -> None:
        self.params = {
            "w1": rng.normal(0, np.sqrt(2 / 64), (64, hidden)),
            "b1": np.zeros(hidden),
            "w2": rng.normal(0, np.sqrt(2 / hidden), (hidden, 10)),
            "b2": np.zeros(10),
        }
        self.velocity = {k: np.zeros_like(v) for k, v in self.params.items()}

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        h = np.maximum(0.0, x @ self.params["w1"] + self.params["b1"])
        logits = h @ self.params["w2"] + self.params["b2"]
        logits -= logits.max(axis=1, keepdims=True)
        probs = np.exp(logits)
        probs /= probs.sum(axis=1, keepdims=True)
        return h, probs

    def loss(self, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
        _, probs = self.forward(x)
        loss = float(-np.log(probs[np.arange(len(y)), y] + 1e-12).mean())
        accuracy = float((probs.argmax(axis=1) == y).mean())
        return loss, accuracy

    def train_batch(self, x: np.ndarray, y: np.ndarray, lr: float, decay: float) -> float:
        h, probs = self.forward(x)
        loss = float(-np.log(probs[np.arange(len(y)), y] + 1e-12).mean())
        grad_logits = probs.copy()
        grad_logits[np.arange(len(y)), y] -= 1.0
        grad_logits /= len(y)
        grads = {
            "w2": h.T @ grad_logits + decay * self.params["w2"],
            "b2": grad_logits.sum(axis=0),
        }
        grad_h = grad_logits @ self.params["w2"].T
        grad_h[h <= 0] = 0.0
        grads["w1"] = x.T @ grad_h + decay * self.params["w1"]
        grads["b1"] = grad_h.sum(axis=0)
        for name, grad in grads.items():
            self.velocity[name] = 0.9 * self.velocity[name] - lr * grad
            self.params[name] += self.velocity[name]
        return loss

    def save(self, path: pathlib.Path, steps: int, rng_state: dict[str, Any]) -> None:
        np.savez(
            path / "model.npz", **self.params, **{f"v_{k}": v for k, v in self.velocity.items()}
        )
        (path / "state.json").write_text(json.dumps({"steps_completed": steps, "rng": rng_state}))

    def load(self, path: pathlib.Path) -> tuple[int, dict[str, Any]]:
        data = np.load(path / "model.npz")
        self.params = {k: data[k] for k in ("w1", "b1", "w2", "b2")}
        self.velocity = {k: data[f"v_{k}"] for k in ("w1", "b1", "w2", "b2")}
        state = json.loads((path / "state.json").read_text())
        return int(state["steps_completed"]), state["rng"]


def main(core: assay.core.Context) -> None:
    info = assay.get_cluster_info()
    hparams = {**DEFAULTS, **(info.trial.hparams if info and info.trial else {})}
    seed = info.trial.trial_seed if info and info.trial else 0
    digits = load_digits()
    x = digits.data / 16.0
    x_train, x_val, y_train, y_val = train_test_split(
        x, digits.target, test_size=0.25, random_state=0, stratify=digits.target
    )
    rng = np.random.default_rng(seed)
    model = MLP(int(hparams["hidden_size"]), rng)
    steps = 0
    if info is not None and info.latest_checkpoint is not None:
        with core.checkpoint.restore_path(info.latest_checkpoint) as path:
            steps, rng_state = model.load(path)
            rng.bit_generator.state = rng_state
        logging.info("resumed from checkpoint %s at batch %d", info.latest_checkpoint, steps)

    def checkpoint() -> None:
        with core.checkpoint.store_path({"steps_completed": steps}) as (path, _uuid):
            model.save(path, steps, rng.bit_generator.state)

    print(f"training to the searcher's lengths from batch {steps} with {hparams}", flush=True)
    batch_size = int(hparams["batch_size"])
    lr = float(hparams["learning_rate"])
    decay = float(hparams["weight_decay"])
    for op in core.searcher.operations():
        losses = []
        while steps < op.length:
            idx = rng.integers(0, len(x_train), batch_size)
            losses.append(model.train_batch(x_train[idx], y_train[idx], lr, decay))
            steps += 1
            if steps % REPORT_EVERY == 0:
                core.train.report_training_metrics(steps, {"loss": float(np.mean(losses))})
                losses = []
                op.report_progress(steps)
            if core.preempt.should_preempt():
                checkpoint()
                logging.info("stopping at batch %d as the master asked", steps)
                return
        val_loss, val_acc = model.loss(x_val, y_val)
        core.train.report_validation_metrics(
            steps, {"validation_loss": val_loss, "validation_accuracy": val_acc}
        )
        checkpoint()
        op.report_completed(val_loss)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=assay.LOG_FORMAT)
    with assay.core.init() as core_context:
        main(core_context)
