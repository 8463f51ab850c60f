"""Record the learning curves the B9 benchmark replays: an MLP trained on sklearn's digits.

For every point of a grid of hyperparameters (720 configurations), train ``MLPClassifier``
with ``partial_fit`` one epoch at a time and record, after each epoch, the validation
cross-entropy (the objective B9 replays) and the validation error. Run once; the result is
committed as ``data/digits_curves.json`` so the benchmark replays real curves without training.

The objective is the cross-entropy rather than the error because 540 validation examples make
the error a coarse, tied quantity: on a small table random search then finds "the" optimum by
luck and regret comparisons turn into coin flips.

    .venv/bin/python benchmarks/searchers/record_digits_curves.py    # ~15 min on 2 cores
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import StandardScaler

AXES: dict[str, list[Any]] = {
    "learning_rate": [1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2, 2e-2],
    "alpha": [1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0],
    "hidden": [8, 16, 32, 64, 128],
    "batch_size": [16, 64, 256],
}
EPOCHS = 27


@functools.cache  # once per worker process, not once per configuration
def _data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    x, y = load_digits(return_X_y=True)
    x_tr, x_va, y_tr, y_va = train_test_split(x, y, test_size=0.3, random_state=0, stratify=y)
    scaler = StandardScaler().fit(x_tr)
    return scaler.transform(x_tr), scaler.transform(x_va), y_tr, y_va


def curve(point: tuple[Any, ...]) -> tuple[list[float], list[float]]:
    """The (cross-entropy, error) on the validation split after each epoch."""
    lr, alpha, hidden, batch = point
    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    x_tr, x_va, y_tr, y_va = _data()
    model = MLPClassifier(
        hidden_layer_sizes=(hidden,),
        alpha=alpha,
        learning_rate_init=lr,
        # Batches are cut below; "auto" makes each partial_fit one step on the batch given.
        batch_size="auto",
        random_state=0,
    )
    classes = np.unique(y_tr)
    rng = np.random.default_rng(0)
    losses, errors = [], []
    for _ in range(EPOCHS):
        order = rng.permutation(len(x_tr))
        for start in range(0, len(order), batch):
            idx = order[start : start + batch]
            model.partial_fit(x_tr[idx], y_tr[idx], classes=classes)
        proba = model.predict_proba(x_va)
        losses.append(round(float(log_loss(y_va, proba, labels=classes)), 6))
        errors.append(round(float(np.mean(classes[proba.argmax(axis=1)] != y_va)), 6))
    return losses, errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "data" / "digits_curves.json"
    )
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    points = list(itertools.product(*AXES.values()))
    started = time.time()
    with ProcessPoolExecutor(args.workers) as pool:
        results = list(pool.map(curve, points, chunksize=8))
    losses = {json.dumps(list(p)): r[0] for p, r in zip(points, results, strict=True)}
    errors = {json.dumps(list(p)): r[1] for p, r in zip(points, results, strict=True)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    payload = {"axes": AXES, "epochs": EPOCHS, "objective": "loss", "loss": losses, "error": errors}
    args.out.write_text(json.dumps(payload, separators=(",", ":")))
    print(f"{len(points)} curves of {EPOCHS} epochs in {time.time() - started:.0f} s -> {args.out}")


if __name__ == "__main__":
    main()
