"""B8: pause request -> allocation exited, on 20 running trials (the checkpoint write excluded).

Each run submits an experiment of 20 trials on a local cluster with 20 slots (master + 1 agent),
waits until every trial has reported that it is running its loop, pauses the experiment and
takes, for each trial, the time from just before the pause request to its allocation's end as
the master recorded it (one clock: this machine's). The trials poll ``should_preempt()`` every
10 ms and exit without a checkpoint. Figures: p50 and p95 of each run's 20 latencies, over the
runs.

    .venv/bin/python benchmarks/runtime/bench_b8.py            # writes RESULTS.md
    .venv/bin/python benchmarks/runtime/bench_b8.py --quick    # 4 trials, 1 run; writes nothing
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks._common import (
    LocalCluster,
    ms,
    percentile,
    run_command,
    stamp,
    summary,
    write_section,
)

from assay.context import pack_context

CONTEXT = Path(__file__).resolve().parent / "contexts" / "pause"


def config(trials: int) -> str:
    return json.dumps(
        {
            "name": "b8-pause",
            "entrypoint": "python3 train.py",
            "hyperparameters": {"x": {"type": "double", "minval": 0, "maxval": 1}},
            "searcher": {
                "name": "random",
                "metric": "loss",
                "max_trials": trials,
                "max_concurrent_trials": trials,
            },
            "max_restarts": 0,
        }
    )


def one_run(cluster: LocalCluster, trials: int) -> list[float]:
    client = cluster.client
    exp = client.create_experiment(config(trials), pack_context(CONTEXT).data)
    deadline = time.monotonic() + 600
    while True:
        listed = client.trials(exp.id)
        ready = [t for t in listed if client.metrics(t.id, "training")]
        if len(ready) == trials:
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {len(ready)} of {trials} trials started; see {cluster.home}")
        time.sleep(0.2)
    asked = time.time()
    client.transition(exp.id, "pause")
    latencies: list[float] = []
    while len(latencies) < trials:
        latencies = []
        for t in listed:
            ended = client.trial(t.id).allocations[-1].ended_at
            if ended is not None:
                latencies.append(ended - asked)
        if time.monotonic() > deadline:
            raise RuntimeError(f"{trials - len(latencies)} trials did not stop after the pause")
        time.sleep(0.1)
    client.transition(exp.id, "kill")
    return latencies


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="4 trials, 1 run; write nothing")
    args = parser.parse_args()
    runs, trials = (1, 4) if args.quick else (args.runs, args.trials)
    p50s, p95s, everything = [], [], []
    with LocalCluster(slots=trials) as cluster:
        for i in range(runs):
            lat = ms(one_run(cluster, trials))
            everything += lat
            p50s.append(percentile(lat, 50))
            p95s.append(percentile(lat, 95))
            print(f"run {i + 1}: p50 {p50s[-1]:.0f} ms, p95 {p95s[-1]:.0f} ms", flush=True)
    print(f"B8 p95 over runs: {summary(p95s)} ms")
    if args.quick:
        return 0
    body = (
        "## B8: pause request -> allocation exited\n\n"
        + stamp(run_command("python benchmarks/runtime/bench_b8.py", args.runs, 5))
        + f"- {trials} running trials on a local cluster (master + 1 agent with {trials} slots, "
        "SQLite); the trials poll `should_preempt()` every 10 ms and exit without a checkpoint\n"
        f"- latency: just before the pause request to each allocation's end as the master "
        f"recorded it; {runs} runs\n- target: p95 < 1 s\n\n"
        "| figure | median over runs (min-max) |\n|---|---|\n"
        f"| p50 of a run | {summary(p50s)} ms |\n"
        f"| p95 of a run | {summary(p95s)} ms |\n"
        f"| slowest trial of all runs | {max(everything):.0f} ms |\n"
    )
    write_section("B8", body)
    print("wrote the B8 section of benchmarks/RESULTS.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
