"""Runs in the Ray Tune environment (not assay's): one B1 or B3 measurement, printed as JSON.

The local Ray cluster is started (``ray.init``) before the clock starts, as assay's cluster is
up before its experiment is submitted; the wall time is ``Tuner.fit()``.
B1: a CPU per trial, ``--slots`` CPUs; ``--reuse`` reuses actors across trials.
B3: as many CPUs as trials, each trial reporting ``--rows`` results as fast as it can.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")

import ray
from ray import tune


def sleeper(config: dict[str, float]) -> None:
    time.sleep(config["sleep"])
    tune.report({"loss": 1.0})


def reporter(config: dict[str, int]) -> None:
    rows = int(config["rows"])
    for step in range(1, rows + 1):
        tune.report({"loss": 1.0 / step, "step": step})


def fit(trainable: object, space: dict[str, object], samples: int, reuse: bool) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        tuner = tune.Tuner(
            tune.with_resources(trainable, {"cpu": 1}),  # type: ignore[arg-type]
            param_space=space,
            tune_config=tune.TuneConfig(num_samples=samples, reuse_actors=reuse),
            run_config=tune.RunConfig(storage_path=tmp, verbose=0),
        )
        start = time.perf_counter()
        results = tuner.fit()
        wall = time.perf_counter() - start
        if results.num_errors:
            raise RuntimeError(f"{results.num_errors} Ray Tune trials failed")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("figure", choices=["b1", "b3"])
    parser.add_argument("--trials", type=int, required=True)
    parser.add_argument("--sleep", type=float, default=1.0)
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--reuse", action="store_true")
    args = parser.parse_args()
    cpus = args.slots if args.figure == "b1" else args.trials
    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    space: dict[str, object] = {"x": tune.uniform(0.0, 1.0)}
    if args.figure == "b1":
        wall = fit(sleeper, {**space, "sleep": args.sleep}, args.trials, args.reuse)
        result = {"wall": wall}
    else:
        wall = fit(reporter, {**space, "rows": args.rows}, args.trials, args.reuse)
        result = {"wall": wall, "rows": args.trials * args.rows}
    ray.shutdown()
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
