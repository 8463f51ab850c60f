"""A small PyTorch MLP on scikit-learn's bundled digits, trained under assay's Core API.

The same shape as ``examples/digits`` with PyTorch doing the maths: the searcher says how many
batches to train to (``op.length``); the script trains, reports training metrics every
``REPORT_EVERY`` batches, validates, reports the searcher metric and checkpoints the model,
optimizer and RNG state. Asked to stop (a pause, or the scheduler wanting the slot), it
checkpoints at the end of the current batch and exits; run again, it resumes from there.
Off-cluster (``python3 train.py``) it trains one short operation with default hyperparameters.
"""

from __future__ import annotations

import logging
import pathlib

import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn

import assay

DEFAULTS = {"learning_rate": 0.05, "hidden_size": 64, "batch_size": 32, "dropout": 0.1}
REPORT_EVERY = 25


def build_model(hidden: int, dropout: float) -> nn.Module:
    return nn.Sequential(
        nn.Linear(64, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, 10)
    )


def main(core: assay.core.Context) -> None:
    # One thread per trial: several trials share a machine's cores without oversubscribing.
    torch.set_num_threads(1)
    info = assay.get_cluster_info()
    hparams = {**DEFAULTS, **(info.trial.hparams if info and info.trial else {})}
    seed = info.trial.trial_seed if info and info.trial else 0
    torch.manual_seed(seed)
    digits = load_digits()
    x_train, x_val, y_train, y_val = train_test_split(
        digits.data / 16.0, digits.target, test_size=0.25, random_state=0, stratify=digits.target
    )
    x_train_t = torch.tensor(x_train, dtype=torch.float32)
    y_train_t = torch.tensor(y_train, dtype=torch.long)
    x_val_t = torch.tensor(x_val, dtype=torch.float32)
    y_val_t = torch.tensor(y_val, dtype=torch.long)

    model = build_model(int(hparams["hidden_size"]), float(hparams["dropout"]))
    optimizer = torch.optim.SGD(
        model.parameters(), lr=float(hparams["learning_rate"]), momentum=0.9
    )
    loss_fn = nn.CrossEntropyLoss()
    generator = torch.Generator().manual_seed(seed)
    steps = 0
    if info is not None and info.latest_checkpoint is not None:
        with core.checkpoint.restore_path(info.latest_checkpoint) as path:
            state = torch.load(path / "state.pt", weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        generator.set_state(state["generator"])
        steps = int(state["steps_completed"])
        logging.info("resumed from checkpoint %s at batch %d", info.latest_checkpoint, steps)

    def checkpoint() -> None:
        with core.checkpoint.store_path({"steps_completed": steps}) as (path, _uuid):
            save(path)

    def save(path: pathlib.Path) -> None:
        state = {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "generator": generator.get_state(),
            "steps_completed": steps,
        }
        torch.save(state, path / "state.pt")

    print(f"training to the searcher's lengths from batch {steps} with {hparams}", flush=True)
    batch_size = int(hparams["batch_size"])
    for op in core.searcher.operations():
        losses: list[float] = []
        model.train()
        while steps < op.length:
            idx = torch.randint(0, len(x_train_t), (batch_size,), generator=generator)
            optimizer.zero_grad()
            loss = loss_fn(model(x_train_t[idx]), y_train_t[idx])
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            steps += 1
            if steps % REPORT_EVERY == 0:
                core.train.report_training_metrics(steps, {"loss": sum(losses) / len(losses)})
                losses = []
                op.report_progress(steps)
            if core.preempt.should_preempt():
                checkpoint()
                logging.info("stopping at batch %d as the master asked", steps)
                return
        model.eval()
        with torch.no_grad():
            logits = model(x_val_t)
            val_loss = loss_fn(logits, y_val_t).item()
            val_acc = (logits.argmax(dim=1) == y_val_t).float().mean().item()
        core.train.report_validation_metrics(
            steps, {"validation_loss": val_loss, "validation_accuracy": val_acc}
        )
        checkpoint()
        op.report_completed(val_loss)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=assay.LOG_FORMAT)
    with assay.core.init() as core_context:
        main(core_context)
