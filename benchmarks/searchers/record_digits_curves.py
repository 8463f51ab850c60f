"""Record the learning curves the B9 benchmark replays: an MLP trained on sklearn's digits.

For every point of a small grid of hyperparameters, train ``MLPClassifier`` with ``partial_fit``
one epoch at a time and record the validation error after each epoch. Run once; the result is
committed as ``data/digits_curves.json`` so the benchmark replays real curves without training.

    .venv/bin/python benchmarks/searchers/record_digits_curves.py
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import StandardScaler

AXES = {
    "learning_rate": [1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2],
    "alpha": [1e-5, 1e-3, 1e-1, 1.0],
    "hidden": [8, 32, 128],
    "batch_size": [16, 64, 256],
}
EPOCHS = 27


def curve(x_tr, y_tr, x_va, y_va, lr: float, alpha: float, hidden: int, batch: int) -> list[float]:
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
    errors = []
    for _ in range(EPOCHS):
        order = rng.permutation(len(x_tr))
        for start in range(0, len(order), batch):
            idx = order[start : start + batch]
            model.partial_fit(x_tr[idx], y_tr[idx], classes=classes)
        errors.append(round(1.0 - float(model.score(x_va, y_va)), 6))
    return errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "data" / "digits_curves.json"
    )
    args = parser.parse_args()
    x, y = load_digits(return_X_y=True)
    x_tr, x_va, y_tr, y_va = train_test_split(x, y, test_size=0.3, random_state=0, stratify=y)
    scaler = StandardScaler().fit(x_tr)
    x_tr, x_va = scaler.transform(x_tr), scaler.transform(x_va)
    curves = {}
    started = time.time()
    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    for point in itertools.product(*AXES.values()):
        curves[json.dumps(list(point))] = curve(x_tr, y_tr, x_va, y_va, *point)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"axes": AXES, "epochs": EPOCHS, "curves": curves}))
    print(f"{len(curves)} curves of {EPOCHS} epochs in {time.time() - started:.0f} s -> {args.out}")


if __name__ == "__main__":
    main()
