"""B9 search quality: regret versus compute, simulated in-process (no master, no agents).

Tasks: Branin and Hartmann6 (one fidelity), multi-fidelity Hartmann6 and the recorded digits-MLP
learning curves (several lengths). Methods, each over the same seeds:

* ``random``: assay's random search; ``tpe``: assay's ``tpe`` searcher (Optuna's TPE behind
  assay's Searcher, one trial at a time);
* ``optuna_random`` / ``optuna_tpe``: Optuna's RandomSampler / TPESampler driving
  ``study.optimize`` directly (the peers);
* multi-fidelity only: ``asha`` (assay's ``adaptive_asha`` in its default ``mode: standard``,
  4 trials at a time), ``asha_aggressive`` (the same in ``mode: aggressive``: only the bracket
  that stops most) and ``asha_tpe`` (standard with ``sampler: tpe``, BOHB-like).

A trial trains at one length unit per unit of time; compute is the sum of units trained
(promoted trials resume from their checkpoint). A result found at time t is charged with all the
compute spent by t, including the partial work of trials still training then. Regret at a budget
is the best full-length value found within it minus the task's optimum.

The digits-MLP objective is the validation cross-entropy after the last epoch, replayed from
720 recorded curves; the notes also say how well each rung's ranking predicts the final one.

    .venv/bin/python benchmarks/searchers/b9_search_quality.py          # 20 seeds, RESULTS.md
    .venv/bin/python benchmarks/searchers/b9_search_quality.py --quick  # 3 seeds, prints only
    .venv/bin/python benchmarks/searchers/b9_search_quality.py --task digits_mlp  # prints only
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import logging
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import optuna

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import stamp, write_section
from functions import BRANIN, HARTMANN, MF_HARTMANN, Task, digits_task

from assay.config import parse_hyperparameters
from assay.searcher import (
    Create,
    OptunaSource,
    RandomSearch,
    Searcher,
    adaptive_asha,
)

HERE = Path(__file__).resolve().parent
PLOT = HERE / "b9_regret.png"

Curve = list[tuple[int, float]]  # (compute so far, full-length value of a finished trial)

TOTAL = -1.0  # a Curve's last entry (TOTAL, compute) records the run's whole compute

ASHA_DIVISOR = 3


def drive(searcher: Searcher, task: Task, cap: float = float("inf")) -> Curve:
    """Run ``searcher`` on ``task`` with a discrete-event clock, to its end or until the compute
    reaches ``cap`` (trials still training then are cut off)."""
    hparams: dict[str, dict[str, Any]] = {}
    trained: dict[str, int] = {}
    heap: list[tuple[int, int, str, int]] = []
    started: dict[str, int] = {}
    now = 0
    tick = 0
    compute = 0
    found: Curve = []

    def absorb(ops: list[Any]) -> None:
        nonlocal tick
        for op in ops:
            if isinstance(op, Create):
                hparams[op.request_id] = op.hparams
                trained[op.request_id] = 0
        # In the operations' order (a set's order would change with each process's hash seed).
        for rid in dict.fromkeys(getattr(op, "request_id", None) for op in ops):
            if not isinstance(rid, str) or rid not in trained:
                continue
            if searcher.is_closed(rid):
                if not searcher.trials[rid].exited:
                    closing.append(rid)
                continue
            target = searcher.pending_length(rid)
            if target is not None and rid not in queued:
                tick += 1
                queued.add(rid)
                started[rid] = now
                heapq.heappush(heap, (now + target - trained[rid], tick, rid, target))

    closing: list[str] = []
    queued: set[str] = set()
    absorb(searcher.initial_operations())
    while (heap or closing) and compute + sum(now - started[r] for r in queued) < cap:
        while closing:
            absorb(searcher.trial_closed(closing.pop()))
        if not heap:
            continue
        now, _, rid, target = heapq.heappop(heap)
        queued.discard(rid)
        compute += target - trained[rid]
        trained[rid] = target
        value = task.value(hparams[rid], target)
        if target == task.max_length:
            # Trials still training at ``now`` have spent compute too.
            found.append((compute + sum(now - started[r] for r in queued), value))
        absorb(searcher.validation_completed(rid, value, target))
    return [*found, (compute, TOTAL)]


def optuna_run(task: Task, sampler: optuna.samplers.BaseSampler, n_trials: int) -> Curve:
    space = task.space
    found: Curve = []

    def objective(trial: optuna.Trial) -> float:
        hp: dict[str, Any] = {}
        for name, spec in space.items():
            if spec["type"] == "double":
                hp[name] = trial.suggest_float(name, spec["minval"], spec["maxval"])
            else:
                hp[name] = trial.suggest_categorical(name, spec["vals"])
        value = task.value(hp, task.max_length)
        found.append((task.max_length * (len(found) + 1), value))
        return value

    study = optuna.create_study(sampler=sampler)
    study.optimize(objective, n_trials=n_trials)
    return [*found, (task.max_length * n_trials, TOTAL)]


def total_compute(curve: Curve) -> int:
    return curve[-1][0]


def regret_at(curve: Curve, budget: float, optimum: float) -> float:
    best = min((v for c, v in curve[:-1] if c <= budget), default=None)
    return float("inf") if best is None else best - optimum


def methods(task: Task, n: int, asha_trials: int) -> dict[str, Any]:
    space = parse_hyperparameters(task.space)

    def random_search(seed: int) -> Curve:
        rng = random.Random(seed)
        method = RandomSearch(
            space, max_trials=n, max_length=task.max_length, max_concurrent=1, rng=rng
        )
        return drive(Searcher(method), task)

    def tpe(seed: int) -> Curve:
        rng = random.Random(seed)
        source = OptunaSource(space, sampler="tpe", seed=seed)
        method = RandomSearch(
            space,
            max_trials=n,
            max_length=task.max_length,
            max_concurrent=1,
            rng=rng,
            source=source,
        )
        return drive(Searcher(method), task)

    def asha(seed: int, sampler: str | None = None, mode: str = "standard") -> Curve:
        rng = random.Random(seed)
        source = None if sampler is None else OptunaSource(space, sampler=sampler, seed=seed)
        method = adaptive_asha(
            space,
            max_length=task.max_length,
            max_trials=asha_trials,
            rng=rng,
            divisor=ASHA_DIVISOR,
            max_concurrent=4,
            mode=mode,
            source=source,
        )
        return drive(Searcher(method), task)

    runs: dict[str, Any] = {
        "random": random_search,
        "tpe": tpe,
        "optuna_random": lambda seed: optuna_run(task, optuna.samplers.RandomSampler(seed=seed), n),
        "optuna_tpe": lambda seed: optuna_run(task, optuna.samplers.TPESampler(seed=seed), n),
    }
    if task.multi_fidelity:
        runs["asha"] = asha
        runs["asha_aggressive"] = lambda seed: asha(seed, mode="aggressive")
        runs["asha_tpe"] = lambda seed: asha(seed, "tpe")
    return runs


def median(values: list[float]) -> float:
    return float(statistics.median(values))


def quartiles(values: list[float]) -> tuple[float, float]:
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[2]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument(
        "--quick", action="store_true", help="3 seeds, small budgets, no files written"
    )
    parser.add_argument(
        "--task", action="append", help="run only this task (repeatable); no files written"
    )
    args = parser.parse_args()
    optuna.logging.set_verbosity(logging.WARNING)
    seeds = list(range(3 if args.quick else args.seeds))
    scale = 0.3 if args.quick else 1.0
    digits = digits_task()
    tasks = [
        (BRANIN, int(100 * scale), 0),
        (HARTMANN, int(100 * scale), 0),
        (MF_HARTMANN, int(100 * scale), int(600 * scale)),
        (digits, int(60 * scale), int(300 * scale)),
    ]
    if args.task:
        unknown = set(args.task) - {task.name for task, _, _ in tasks}
        if unknown:
            parser.error(f"unknown task(s): {', '.join(sorted(unknown))}")
        tasks = [entry for entry in tasks if entry[0].name in args.task]
    results: dict[str, dict[str, list[Curve]]] = {}
    budgets: dict[str, int] = {}
    started = time.time()
    for task, n, asha_trials in tasks:
        budgets[task.name] = n * task.max_length
        results[task.name] = {}
        for name, run in methods(task, n, asha_trials).items():
            t0 = time.time()
            results[task.name][name] = [run(seed) for seed in seeds]
            print(f"{task.name:>13} {name:>13}: {time.time() - t0:6.1f} s", flush=True)
    elapsed = time.time() - started
    table, notes = summarize(tasks, results, budgets, seeds)
    if any(task is digits for task, _, _ in tasks):
        notes += "\n" + rung_predictiveness(digits)
    print(table)
    print(notes)
    if args.quick or args.task:
        return
    plot(tasks, results, budgets)
    command = "python benchmarks/searchers/b9_search_quality.py" + (
        f" --seeds {args.seeds}" if args.seeds != 20 else ""
    )
    body = (
        "## B9 search quality (regret vs compute, simulated in-process)\n\n"
        + stamp(command)
        + f"- {len(seeds)} seeds per method; wall time {elapsed:.0f} s\n"
        + "- regret = best full-length value found - optimum; median over seeds [quartiles]; "
        "compute in length units (Branin/Hartmann6: 1 per trial; MF-Hartmann6: 81 per full "
        "trial; digits-MLP: 27 epochs per full trial, validation cross-entropy of 720 "
        "configurations recorded by `record_digits_curves.py`); in the plot a regret of 0 is "
        "drawn at 1e-6\n\n"
        + table
        + "\n\n"
        + notes
        + "\n\n![regret vs compute](searchers/b9_regret.png)\n"
    )
    write_section("B9", body)


def summarize(
    tasks: list[tuple[Task, int, int]],
    results: dict[str, dict[str, list[Curve]]],
    budgets: dict[str, int],
    seeds: list[int],
) -> tuple[str, str]:
    from scipy.stats import wilcoxon

    lines = [
        "| task | method | final regret, median [q1, q3] | total compute (median) |",
        "|---|---|---|---|",
    ]
    notes = []
    for task, _, _ in tasks:
        budget = budgets[task.name]
        finals: dict[str, list[float]] = {}
        for name, curves in results[task.name].items():
            regrets = [regret_at(c, float("inf"), task.optimum) for c in curves]
            finals[name] = regrets
            used = median([float(total_compute(c)) for c in curves])
            q1, q3 = quartiles(regrets)
            lines.append(
                f"| {task.name} | {name} | {median(regrets):.4g} [{q1:.3g}, {q3:.3g}] "
                f"| {used:.0f} |"
            )
        ours, peer = finals["tpe"], finals["optuna_tpe"]
        diffs = [a - b for a, b in zip(ours, peer, strict=True)]
        if any(d != 0 for d in diffs):
            p = float(wilcoxon(ours, peer, alternative="greater").pvalue)
        else:
            p = 1.0
        verdict = "not significantly worse" if p >= 0.05 else "SIGNIFICANTLY WORSE"
        notes.append(
            f"- {task.name}: assay tpe vs Optuna TPESampler, one-sided Wilcoxon signed-rank "
            f"(H1: assay worse) p = {p:.3f} -> {verdict} (target: not worse at p < 0.05)"
        )
        if task.multi_fidelity:
            target = median(finals["random"])
            for name in ("asha", "asha_aggressive", "asha_tpe"):
                curves = results[task.name][name]
                reach = compute_to_reach(curves, target, task.optimum)
                ratio = "never" if reach is None else f"{reach / budget:.2f}"
                within = sum(regret_at(c, budget / 3, task.optimum) <= target for c in curves)
                notes.append(
                    f"- {task.name}: {name} reaches random search's final median regret "
                    f"({target:.4g}, after {budget} units) with "
                    f"{'-' if reach is None else reach} units = {ratio} of random's compute "
                    f"(target <= 0.33; within a third of it in {within} of {len(curves)} seeds)"
                )
    return "\n".join(lines), "\n".join(notes)


def rung_predictiveness(task: Task) -> str:
    """How well a configuration's value at each ASHA rung predicts its final value."""
    from scipy.stats import rankdata, spearmanr

    grid = [
        dict(zip(task.space, point, strict=True))
        for point in itertools.product(*(spec["vals"] for spec in task.space.values()))
    ]
    final = [task.value(hp, task.max_length) for hp in grid]
    best = min(range(len(grid)), key=final.__getitem__)
    lengths = [task.max_length // ASHA_DIVISOR**k for k in (3, 2, 1)]
    rho, ranks = [], []
    for length in lengths:
        early = [task.value(hp, length) for hp in grid]
        rho.append(f"{float(spearmanr(early, final).statistic):.2f}")
        ranks.append(str(int(rankdata(early, method="min")[best])))
    return (
        f"- {task.name} curves: Spearman rank correlation of the {len(grid)} configurations' "
        f"value after {' / '.join(map(str, lengths))} epochs with the value after "
        f"{task.max_length}: {' / '.join(rho)}; the best configuration ranks "
        f"{' / '.join(ranks)} there"
    )


def compute_to_reach(curves: list[Curve], target: float, optimum: float) -> int | None:
    """The smallest budget at which the median (over seeds) regret is <= ``target``."""
    points = sorted({c for curve in curves for c, _ in curve[:-1]})
    for budget in points:
        if median([regret_at(curve, budget, optimum) for curve in curves]) <= target:
            return budget
    return None


def plot(
    tasks: list[tuple[Task, int, int]],
    results: dict[str, dict[str, list[Curve]]],
    budgets: dict[str, int],
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(tasks), figsize=(5 * len(tasks), 4))
    for ax, (task, _, _) in zip(axes, tasks, strict=True):
        top = max(
            budgets[task.name],
            *(total_compute(c) for curves in results[task.name].values() for c in curves),
        )
        grid = sorted({max(1, int(top * i / 200)) for i in range(1, 201)})
        for name, curves in results[task.name].items():
            meds = [median([regret_at(c, b, task.optimum) for c in curves]) for b in grid]
            xs = [b for b, m in zip(grid, meds, strict=True) if m != float("inf")]
            ys = [max(m, 1e-6) for m in meds if m != float("inf")]
            ax.plot(xs, ys, label=name)
        ax.axvline(budgets[task.name], color="grey", linestyle=":", linewidth=1)
        ax.set_yscale("log")
        ax.set_title(task.name)
        ax.set_xlabel("compute (length units)")
        ax.set_ylabel("median regret")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(PLOT, dpi=110)
    print(f"plot -> {PLOT}")


if __name__ == "__main__":
    main()
