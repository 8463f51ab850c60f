"""Trial code for the custom-searcher example: scikit-learn's SGD classifier on the digits, one
pass over the training split per step (``partial_fit``), validated at the searcher's length."""

from __future__ import annotations

import logging
import pickle

import numpy as np
from sklearn.datasets import load_digits
from sklearn.linear_model import SGDClassifier
from sklearn.model_selection import train_test_split

import assay

DEFAULTS = {"alpha": 1e-4, "eta0": 0.1, "loss": "log_loss"}


def main(core: assay.core.Context) -> None:
    info = assay.get_cluster_info()
    hparams = {**DEFAULTS, **(info.trial.hparams if info and info.trial else {})}
    seed = info.trial.trial_seed if info and info.trial else 0
    digits = load_digits()
    x_train, x_val, y_train, y_val = train_test_split(
        digits.data / 16.0, digits.target, test_size=0.25, random_state=0, stratify=digits.target
    )
    model = SGDClassifier(
        loss=hparams["loss"],
        alpha=float(hparams["alpha"]),
        learning_rate="constant",
        eta0=float(hparams["eta0"]),
        random_state=seed % 2**32,
    )
    steps = 0
    if info is not None and info.latest_checkpoint is not None:
        with core.checkpoint.restore_path(info.latest_checkpoint) as path:
            steps, model = pickle.loads((path / "model.pkl").read_bytes())
    for op in core.searcher.operations():
        while steps < op.length:
            model.partial_fit(x_train, y_train, classes=np.arange(10))
            steps += 1
            train_error = 1.0 - float(model.score(x_train, y_train))
            core.train.report_training_metrics(steps, {"train_error": train_error})
            if core.preempt.should_preempt():
                break
        if steps >= op.length:
            error = 1.0 - float(model.score(x_val, y_val))
            core.train.report_validation_metrics(steps, {"validation_error": error})
        with core.checkpoint.store_path({"steps_completed": steps}) as (path, _uuid):
            (path / "model.pkl").write_bytes(pickle.dumps((steps, model)))
        if steps < op.length:
            return  # preempted: the checkpoint above is where the next run resumes
        op.report_completed(error)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=assay.LOG_FORMAT)
    with assay.core.init() as core_context:
        main(core_context)
