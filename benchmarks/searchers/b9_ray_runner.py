"""Runs in Ray Tune's virtual environment (not assay's): Ray's ``ASHAScheduler`` deciding on the
recorded curves, one run per seed; prints ``RESULT {json}`` with each seed's curve.

The scheduler is driven through the calls Ray's ``TuneController`` makes, with the arguments it
passes: ``on_trial_add`` when a trial starts, ``on_trial_result`` for each result (a dict with
``training_iteration`` and the metric), and ``on_trial_complete`` with the last result when the
scheduler says STOP or the trial reaches ``max_t``. The scheduler reads nothing of a trial but its
``trial_id``, so a small stand-in carries it; no Ray cluster is started (the decisions are the
same, without the seconds of actor start-up per trial). Hyperparameters are drawn uniformly at
random, as Tune's default ``BasicVariantGenerator`` does for ``tune.uniform``/``tune.choice``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import numpy as np
from ray.tune.schedulers import ASHAScheduler, TrialScheduler

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _stepper import Curve, replay, sample
from functions import MF_HARTMANN, Task, digits_task


class StubTrial:
    """What the scheduler reads of ``ray.tune.experiment.Trial``: its id."""

    def __init__(self, trial_id: str) -> None:
        self.trial_id = trial_id


class RayPolicy:
    def __init__(self, task: Task, seed: int, rf: float, grace: int, brackets: int) -> None:
        self.task = task
        self.rng = random.Random(seed)
        np.random.seed(seed)  # the scheduler draws each trial's bracket with numpy
        self.scheduler = ASHAScheduler(
            time_attr="training_iteration",
            metric="loss",
            mode="min",
            max_t=task.max_length,
            grace_period=grace,
            reduction_factor=rf,
            brackets=brackets,
        )
        self.count = 0

    def start(self) -> tuple[Any, dict[str, Any]]:
        self.count += 1
        trial = StubTrial(f"t{self.count:06d}")
        self.scheduler.on_trial_add(None, trial)  # type: ignore[arg-type]
        return trial, sample(self.task.space, self.rng)

    def report(self, handle: Any, step: int, value: float, last: bool) -> bool:
        result = {"training_iteration": step, "loss": value}
        decision = self.scheduler.on_trial_result(None, handle, result)  # type: ignore[arg-type]
        if decision == TrialScheduler.STOP or last:
            self.scheduler.on_trial_complete(None, handle, result)  # type: ignore[arg-type]
            return False
        return True


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("task", choices=["digits_mlp", "mf_hartmann6"])
    parser.add_argument("--seeds", type=int, required=True)
    parser.add_argument("--workers", type=int, required=True)
    parser.add_argument("--cap", type=int, required=True)
    parser.add_argument("--rf", type=float, default=3)
    parser.add_argument("--grace", type=int, default=1)
    parser.add_argument("--brackets", type=int, default=1)
    args = parser.parse_args()
    task = digits_task() if args.task == "digits_mlp" else MF_HARTMANN
    curves: list[Curve] = []
    for seed in range(args.seeds):
        policy = RayPolicy(task, seed, args.rf, args.grace, args.brackets)
        curves.append(
            replay(task.value, task.max_length, policy, workers=args.workers, cap=args.cap)
        )
    print("RESULT " + json.dumps(curves))


if __name__ == "__main__":
    main()
