"""B9 against the peers' early stopping: assay's ``adaptive_asha`` (every mode) beside Optuna's
SuccessiveHalvingPruner and HyperbandPruner and Ray Tune's ASHAScheduler, on the recorded
digits-MLP curves and multi-fidelity Hartmann6, simulated in-process with the same clock.

Every method samples its configurations at random, keeps 4 trials training at a time, and runs
until it has spent random search's compute: the budget B is random search's whole run (60 x 27
epochs on digits, 100 x 81 units on MF-Hartmann6); trials are never the limit. Figures, over the
same seeds:

* compute to target: the compute after which a seed's best full-length value is within random
  search's final median regret, as a fraction of B (per seed; ``>1`` where not reached in B);
* the same read off the median regret curve (the figure ``b9_search_quality.py`` quotes);
* regret at B: the best full-length value found with random search's compute, minus the optimum.

Settings are matched (reduction factor 3, minimum resource 1 unit, maximum the full length,
no grace beyond one unit); a second block runs each system with its own defaults (assay's
``divisor: 4``, ``max_rungs: 5``; Optuna's ``SuccessiveHalvingPruner()`` and
``HyperbandPruner(max_resource=...)``; Ray's ``ASHAScheduler(max_t=...)``, reduction factor 4).

How each is driven (see ``_stepper.py`` and ``b9_ray_runner.py``):
assay's searcher through ``b9_search_quality.drive`` (promotions resume from a checkpoint);
Optuna through ask-and-tell, each trial calling ``trial.report`` and ``trial.should_prune``
after every unit as an objective with pruning does; Ray's scheduler in a subprocess of Ray
Tune's own virtual environment (``benchmarks/peers/_venvs.py``), through the calls Ray's trial
controller makes (``on_trial_add`` / ``on_trial_result`` / ``on_trial_complete``), without
starting a Ray cluster.

    .venv/bin/python benchmarks/searchers/b9_peers.py          # 20 seeds; writes RESULTS.md
    .venv/bin/python benchmarks/searchers/b9_peers.py --quick  # 2 seeds, small, matched
                                                               # settings, no Ray; prints
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import optuna

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from _results import stamp, write_section
from _stepper import Curve, replay
from b9_search_quality import compute_to_reach, drive, median, quartiles, regret_at
from benchmarks.peers._venvs import PEERS, PeerUnavailable, python_of
from functions import MF_HARTMANN, Task, digits_task

from assay.config import parse_hyperparameters
from assay.searcher import RandomSearch, Searcher, adaptive_asha

HERE = Path(__file__).resolve().parent
WORKERS = 4
TRIALS = 10**6  # assay's max_trials: large enough that the compute cap ends every run
MODES = ("conservative", "standard", "aggressive")

Method = Callable[[int], Curve]


class OptunaPolicy:
    """An Optuna study with a pruner, asked for trials as workers free up."""

    def __init__(self, task: Task, seed: int, pruner: optuna.pruners.BasePruner) -> None:
        self.task = task
        self.study = optuna.create_study(
            sampler=optuna.samplers.RandomSampler(seed=seed), pruner=pruner
        )

    def start(self) -> tuple[Any, dict[str, Any]]:
        trial = self.study.ask()
        hp: dict[str, Any] = {}
        for name, spec in self.task.space.items():
            if spec["type"] == "double":
                hp[name] = trial.suggest_float(name, spec["minval"], spec["maxval"])
            else:
                hp[name] = trial.suggest_categorical(name, spec["vals"])
        return trial, hp

    def report(self, trial: optuna.Trial, step: int, value: float, last: bool) -> bool:
        trial.report(value, step)
        if trial.should_prune():
            self.study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            return False
        if last:
            self.study.tell(trial, value)
            return False
        return True


def assay_methods(task: Task, cap: int, divisor: float, max_rungs: int) -> dict[str, Method]:
    space = parse_hyperparameters(task.space)

    def asha(mode: str) -> Method:
        def run(seed: int) -> Curve:
            method = adaptive_asha(
                space,
                max_length=task.max_length,
                max_trials=TRIALS,
                rng=random.Random(seed),
                divisor=divisor,
                max_rungs=max_rungs,
                max_concurrent=WORKERS,
                mode=mode,
            )
            return drive(Searcher(method), task, cap)

        return run

    return {f"assay {mode}": asha(mode) for mode in MODES}


def optuna_methods(task: Task, cap: int, defaults: bool) -> dict[str, Method]:
    def with_pruner(make: Callable[[], optuna.pruners.BasePruner]) -> Method:
        def run(seed: int) -> Curve:
            policy = OptunaPolicy(task, seed, make())
            return replay(task.value, task.max_length, policy, workers=WORKERS, cap=cap)

        return run

    if defaults:
        return {
            "Optuna SuccessiveHalvingPruner": with_pruner(optuna.pruners.SuccessiveHalvingPruner),
            "Optuna HyperbandPruner": with_pruner(
                lambda: optuna.pruners.HyperbandPruner(max_resource=task.max_length)
            ),
        }
    return {
        "Optuna SuccessiveHalvingPruner": with_pruner(
            lambda: optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=3)
        ),
        "Optuna HyperbandPruner": with_pruner(
            lambda: optuna.pruners.HyperbandPruner(
                min_resource=1, max_resource=task.max_length, reduction_factor=3
            )
        ),
    }


def ray_curves(task: Task, seeds: int, cap: int, rf: float) -> list[Curve]:
    python = python_of(PEERS["ray"])
    result = subprocess.run(
        [str(python), str(HERE / "b9_ray_runner.py"), task.name, "--seeds", str(seeds),
         "--workers", str(WORKERS), "--cap", str(cap), "--rf", str(rf)],
        capture_output=True, text=True, timeout=3600, check=False,
    )  # fmt: skip
    for line in result.stdout.splitlines():
        if line.startswith("RESULT "):
            return [[(int(c), float(v)) for c, v in curve] for curve in json.loads(line[7:])]
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()] or [f"exit {result.returncode}"]
    raise PeerUnavailable(f"Ray's ASHAScheduler run failed: {lines[-1].strip()[:200]}")


def random_search(task: Task, n: int) -> Method:
    space = parse_hyperparameters(task.space)

    def run(seed: int) -> Curve:
        method = RandomSearch(
            space, max_trials=n, max_length=task.max_length, max_concurrent=1,
            rng=random.Random(seed),
        )  # fmt: skip
        return drive(Searcher(method), task)

    return run


def reach(curve: Curve, target: float, optimum: float) -> float:
    """The compute at which ``curve``'s regret first gets within ``target`` (inf: never)."""
    best = math.inf
    for compute, value in curve[:-1]:
        best = min(best, value)
        if best - optimum <= target:
            return float(compute)
    return math.inf


def share(compute: float, budget: int) -> str:
    return ">1" if compute == math.inf else f"{compute / budget:.2f}"


def fraction(values: list[float], budget: int) -> str:
    q1, q3 = quartiles(values)
    return f"{share(median(values), budget)} [{share(q1, budget)}, {share(q3, budget)}]"


def rows(task: Task, runs: dict[str, list[Curve]], target: float, budget: int) -> list[str]:
    out = []
    for name, curves in runs.items():
        reached = [reach(c, target, task.optimum) for c in curves]
        on_median = compute_to_reach(curves, target, task.optimum)
        at_budget = [regret_at(c, budget, task.optimum) for c in curves]
        q1, q3 = quartiles(at_budget)
        out.append(
            f"| {task.name} | {name} | {fraction(reached, budget)} | "
            f"{'>1' if on_median is None else f'{on_median / budget:.2f}'} | "
            f"{median(at_budget):.4g} [{q1:.3g}, {q3:.3g}] | "
            f"{sum(r <= budget / 3 for r in reached)}/{len(curves)} |"
        )
    return out


def verdict(
    task: Task, block: str, runs: dict[str, list[Curve]], target: float, budget: int
) -> str:
    """assay's default mode against the best peer, by median compute to target over seeds."""

    def to_target(name: str) -> float:
        return median([reach(c, target, task.optimum) for c in runs[name]])

    peers = [n for n in runs if not n.startswith(("assay", "random"))]
    best = min(peers, key=to_target)
    ours, theirs = to_target("assay standard"), to_target(best)
    word = "at least as good as" if ours <= theirs else "BEHIND"
    return (
        f"- {task.name} ({block}): assay's default mode (standard) needs "
        f"{share(ours, budget)} of B, {word} the best peer, {best} ({share(theirs, budget)}); "
        f"assay aggressive {share(to_target('assay aggressive'), budget)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="2 seeds, a fifth of the compute, matched settings only, no Ray; prints",
    )
    args = parser.parse_args()
    optuna.logging.set_verbosity(logging.WARNING)
    seeds = list(range(2 if args.quick else args.seeds))
    scale = 0.2 if args.quick else 1.0
    tasks = [(digits_task(), int(60 * scale)), (MF_HARTMANN, int(100 * scale))]
    header = [
        "| task | method | compute to target, median [q1, q3] (x B) | on the median curve (x B) "
        "| regret at B, median [q1, q3] | seeds within B/3 |",
        "|---|---|---|---|---|---|",
    ]
    tables = {"matched": list(header), "defaults": list(header)}
    notes: list[str] = []
    started = time.time()
    for task, n in tasks:
        budget = n * task.max_length
        randoms = [random_search(task, n)(seed) for seed in seeds]
        target = median([regret_at(c, math.inf, task.optimum) for c in randoms])
        notes.append(
            f"- {task.name}: B = {budget} units; target = random search's final median regret "
            f"{target:.4g}"
        )
        blocks = [("matched", 3, 5, 3), ("defaults", 4, 5, 4)][: 1 if args.quick else 2]
        for block, divisor, max_rungs, rf in blocks:
            runs: dict[str, list[Curve]] = {}
            if block == "matched":
                runs["random search (B)"] = randoms
            methods = {
                **assay_methods(task, budget, divisor, max_rungs),
                **optuna_methods(task, budget, defaults=block == "defaults"),
            }
            for name, run in methods.items():
                t0 = time.time()
                runs[name] = [run(seed) for seed in seeds]
                print(f"{task.name:>13} {block:>8} {name:>31}: {time.time() - t0:6.1f} s")
            name = "Ray Tune ASHAScheduler"
            if args.quick:
                notes.append(f"- {name} ({block}): not run in --quick (it needs Ray's venv)")
            else:
                t0 = time.time()
                try:
                    runs[name] = ray_curves(task, len(seeds), budget, rf)
                except PeerUnavailable as exc:
                    notes.append(f"- {name} ({block}) on {task.name}: not measured: {exc}")
                print(f"{task.name:>13} {block:>8} {name:>31}: {time.time() - t0:6.1f} s")
            tables[block] += rows(task, runs, target, budget)
            notes.append(verdict(task, block, runs, target, budget))
    elapsed = time.time() - started
    titles = {
        "matched": "### Matched settings (reduction factor 3, minimum 1 unit)",
        "defaults": "### Each system's defaults (reduction factor 4)",
    }
    body = "".join(
        f"{titles[block]}\n\n" + "\n".join(table) + "\n\n"
        for block, table in tables.items()
        if len(table) > len(header)
    ) + "\n".join(notes)
    print(body)
    if args.quick:
        return
    command = "python benchmarks/searchers/b9_peers.py" + (
        f" --seeds {args.seeds}" if args.seeds != 20 else ""
    )
    write_section(
        "B9-peers",
        "## B9 against the peers' early stopping (simulated in-process)\n\n"
        + stamp(command)
        + f"- {len(seeds)} seeds per method; wall time {elapsed:.0f} s\n"
        + f"- every method: random configurations, {WORKERS} trials at a time, run to B\n\n"
        + body,
    )


if __name__ == "__main__":
    main()
