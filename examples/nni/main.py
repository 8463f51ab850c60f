"""An sklearn trial written as NNI trials are: parameters from ``nni.get_next_parameter()``,
one intermediate result per round of training, the test accuracy as the final result.

Runs unchanged under NNI, under assay (``assay nni create --config config.yml``), and on its
own (``python3 main.py``), where it trains once with the defaults below.
"""

from __future__ import annotations

import logging

import nni
from sklearn.datasets import load_digits
from sklearn.linear_model import SGDClassifier
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

log = logging.getLogger("sklearn_digits")

DEFAULTS = {"alpha": 1e-4, "penalty": "l2", "loss": "hinge", "rounds": 10}


def main() -> None:
    params = {**DEFAULTS, **nni.get_next_parameter()}
    log.info("parameters: %s", params)
    x, y = load_digits(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.25, random_state=0)
    scaler = StandardScaler().fit(x_train)
    x_train, x_test = scaler.transform(x_train), scaler.transform(x_test)
    model = SGDClassifier(
        alpha=float(params["alpha"]),
        penalty=str(params["penalty"]),
        loss=str(params["loss"]),
        random_state=0,
    )
    classes = sorted(set(y))
    score = 0.0
    for _ in range(int(params["rounds"])):
        model.partial_fit(x_train, y_train, classes=classes)
        score = float(model.score(x_test, y_test))
        nni.report_intermediate_result(score)
    nni.report_final_result(score)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    main()
