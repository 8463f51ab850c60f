"""B5 searcher cost: one TPE suggestion with 1,000 finished trials in a 5-D space.

Measures, in the same process and run:

* ``assay``: ``OptunaSource.suggest`` (what the ``tpe`` searcher calls per new trial; it rebuilds
  the sampler with a history-derived seed, then asks);
* ``optuna``: ``study.ask()`` on a plain in-memory Optuna study with ``TPESampler`` holding the
  same 1,000 trials (the peer);
* the cost of the snapshot the master stores after every event, and of restoring it.

Each run times ``--asks`` suggestions (each told a value afterwards, so the history stays at
~1,000) and keeps the median; the figures are the median of ``--runs`` runs, with min-max.

    .venv/bin/python benchmarks/searchers/b5_suggest_cost.py
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import statistics
import sys
import time
from pathlib import Path

import optuna

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import stamp, write_section

from assay.config import parse_hyperparameters
from assay.searcher import OptunaSource, Outcome, distributions

SPACE = {f"x{i}": {"type": "double", "minval": -5.0, "maxval": 5.0} for i in range(5)}


def objective(hp: dict[str, float]) -> float:
    return sum((v - 1.0) ** 2 for v in hp.values())


def history(n: int, seed: int) -> list[dict[str, float]]:
    rng = random.Random(seed)
    return [{f"x{i}": rng.uniform(-5, 5) for i in range(5)} for _ in range(n)]


def assay_source(points: list[dict[str, float]], seed: int) -> OptunaSource:
    space = parse_hyperparameters(SPACE)
    source = OptunaSource(space, sampler="tpe", seed=seed)
    # Build the 1,000 finished trials through a snapshot, as a master restart would.
    dists = distributions(space)
    state = {
        "history": [
            {
                "id": f"h{i}",
                "params": {k: dists[k].to_internal_repr(v) for k, v in p.items()},
                "state": "complete",
                "value": objective(p),
                "system_attrs": {},
            }
            for i, p in enumerate(points)
        ],
        "numbers": {},
        "study_system_attrs": {},
    }
    source.restore(state)
    return source


def optuna_study(points: list[dict[str, float]], seed: int) -> optuna.Study:
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=seed))
    dists = distributions(parse_hyperparameters(SPACE))
    for p in points:
        study.add_trial(
            optuna.trial.create_trial(params=p, distributions=dists, value=objective(p))
        )
    return study


def time_assay(source: OptunaSource, asks: int) -> float:
    samples = []
    for i in range(asks):
        t0 = time.perf_counter()
        hp = source.suggest(f"new{i}")
        samples.append(time.perf_counter() - t0)
        source.finish(f"new{i}", Outcome.COMPLETE, objective(hp))
    return statistics.median(samples)


def time_optuna(study: optuna.Study, asks: int) -> float:
    dists = distributions(parse_hyperparameters(SPACE))
    samples = []
    for _ in range(asks):
        t0 = time.perf_counter()
        trial = study.ask(dists)
        samples.append(time.perf_counter() - t0)
        study.tell(trial, objective(trial.params))
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--asks", type=int, default=20)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="200 trials, 2 runs, prints only")
    args = parser.parse_args()
    if args.quick:
        args.trials, args.runs, args.asks = 200, 2, 5
    optuna.logging.set_verbosity(logging.WARNING)
    ours, peer, snap, restore, size = [], [], [], [], 0
    for run in range(args.runs):
        points = history(args.trials, run)
        source = assay_source(points, run)
        study = optuna_study(points, run)
        # Alternate which goes first so drift on a shared machine hits both alike.
        if run % 2:
            peer.append(time_optuna(study, args.asks))
            ours.append(time_assay(source, args.asks))
        else:
            ours.append(time_assay(source, args.asks))
            peer.append(time_optuna(study, args.asks))
        t0 = time.perf_counter()
        text = json.dumps(source.snapshot())
        snap.append(time.perf_counter() - t0)
        size = len(text)
        t0 = time.perf_counter()
        OptunaSource(parse_hyperparameters(SPACE), sampler="tpe", seed=run).restore(
            json.loads(text)
        )
        restore.append(time.perf_counter() - t0)
        print(
            f"run {run}: assay {ours[-1] * 1e3:.2f} ms, optuna {peer[-1] * 1e3:.2f} ms", flush=True
        )

    def fmt(xs: list[float]) -> str:
        return f"{statistics.median(xs) * 1e3:.2f} ms ({min(xs) * 1e3:.2f}-{max(xs) * 1e3:.2f})"

    ratio = statistics.median(ours) / statistics.median(peer)
    table = "\n".join(
        [
            "| figure | median (min-max) |",
            "|---|---|",
            f"| assay `tpe` suggest, {args.trials} finished trials, 5-D | {fmt(ours)} |",
            f"| Optuna TPESampler `study.ask()`, same trials (peer, same run) | {fmt(peer)} |",
            f"| ratio assay / Optuna | {ratio:.2f} |",
            f"| snapshot (JSON) of the source, {size / 1024:.0f} KiB | {fmt(snap)} |",
            f"| restore from that snapshot (replays the study) | {fmt(restore)} |",
        ]
    )
    print(table)
    if args.quick:
        return
    body = (
        "## B5 searcher cost (TPE suggest at 1,000 finished trials, 5-D)\n\n"
        + stamp("python benchmarks/searchers/b5_suggest_cost.py")
        + f"- {args.runs} runs x {args.asks} suggestions each; per-run median, then median of "
        "runs (min-max of runs)\n- target: <= 10 ms per suggestion\n\n" + table + "\n"
    )
    write_section("B5", body)


if __name__ == "__main__":
    main()
