"""Runs in the Optuna environment (not assay's): one B1 or B3 measurement, printed as JSON.

B1: Optuna's in-process baseline, ``n_jobs`` threads as the slots, in-memory storage.
B3: threads as concurrent trials, each reporting intermediate values as fast as it can to a
SQLite storage (durable, as assay's rows are); rows counted back from the storage.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import optuna


def b1(trials: int, sleep: float, slots: int) -> dict[str, float]:
    study = optuna.create_study()

    def objective(trial: optuna.Trial) -> float:
        trial.suggest_float("x", 0.0, 1.0)
        time.sleep(sleep)
        return 1.0

    start = time.perf_counter()
    study.optimize(objective, n_trials=trials, n_jobs=slots)
    return {"wall": time.perf_counter() - start}


def b3(trials: int, rows: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        storage = optuna.storages.RDBStorage(
            f"sqlite:///{Path(tmp) / 'b3.db'}",
            engine_kwargs={"connect_args": {"timeout": 300}},
        )
        start = time.perf_counter()
        study = optuna.create_study(storage=storage)

        def objective(trial: optuna.Trial) -> float:
            for step in range(1, rows + 1):
                trial.report(1.0 / step, step)
            return 1.0 / rows

        study.optimize(objective, n_trials=trials, n_jobs=trials)
        wall = time.perf_counter() - start
        stored = sum(len(t.intermediate_values) + 1 for t in study.get_trials())
    return {"wall": wall, "rows": stored}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("figure", choices=["b1", "b3"])
    parser.add_argument("--trials", type=int, required=True)
    parser.add_argument("--sleep", type=float, default=1.0)
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--rows", type=int, default=1000)
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    if args.figure == "b1":
        result = b1(args.trials, args.sleep, args.slots)
    else:
        result = b3(args.trials, args.rows)
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
