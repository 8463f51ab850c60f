"""B2 (trial launch latency) and B4 (harness cost), measured on a real local cluster.

B2: for each of N single-trial experiments, submitted one after another:
  * slot assigned -> first line of user code: the allocation's creation time on the master
    (the slots are committed to it) to the ``time.time()`` the script's first line records;
  * submit -> first metric: just before the client sends the experiment to when the trial's
    harness reports its first metric.
  Both clocks are this machine's. For scale: a bare ``python3 -c pass`` start, timed here too.
B4: inside one trial, the cost of ``report_training_metrics`` (20,000 calls, 5 repeats) and the
  overhead of reporting every step of a 10 ms pure-Python step (200 steps, 5 repeats), against
  the same loop without reporting.

    .venv/bin/python benchmarks/runtime/bench_b2_b4.py            # writes RESULTS.md
    .venv/bin/python benchmarks/runtime/bench_b2_b4.py --quick    # proves it runs; writes nothing
"""

from __future__ import annotations

import argparse
import json
import subprocess
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

HERE = Path(__file__).resolve().parent
LAUNCH = HERE / "contexts" / "launch"
HARNESS = HERE / "contexts" / "harness"


def python_start(runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - start)
    return times


def measure_launch(cluster: LocalCluster, runs: int) -> tuple[list[float], list[float]]:
    config = (LAUNCH / "launch.yaml").read_text()
    context = pack_context(LAUNCH).data
    to_first_line, to_first_metric = [], []
    for _ in range(runs):
        submitted = time.time()
        exp = cluster.client.create_experiment(config, context)
        state = cluster.wait_done(exp.id)
        if state != "COMPLETED":
            raise RuntimeError(f"launch experiment {exp.id} ended {state}")
        trial = cluster.client.trials(exp.id)[0]
        alloc = cluster.client.trial(trial.id).allocations[0]
        metric = cluster.client.metrics(trial.id, "training")[0]
        to_first_line.append(metric.metrics["first_line"] - alloc.created_at)
        to_first_metric.append(metric.time - submitted)
    return to_first_line, to_first_metric


def measure_harness(cluster: LocalCluster, quick: bool) -> dict[str, object]:
    config = (HARNESS / "harness.yaml").read_text()
    if quick:
        # A fraction of the calls and steps: enough to prove the measurement works.
        config += "hyperparameters: {calls: 2000, steps: 20, repeats: 2}\n"
    exp = cluster.client.create_experiment(config, pack_context(HARNESS).data)
    state = cluster.wait_done(exp.id)
    trial = cluster.client.trials(exp.id)[0]
    for entry in cluster.client.logs(trial.id):
        if entry.line.startswith("B4RESULT "):
            result: dict[str, object] = json.loads(entry.line[len("B4RESULT ") :])
            stored = len(cluster.client.metrics(trial.id, "training"))
            result["stored"] = stored
            return result
    raise RuntimeError(f"the harness benchmark trial ended {state} without a result")


def row(name: str, values: list[float]) -> str:
    cells = [percentile(values, 50), percentile(values, 95), min(values), max(values)]
    return f"| {name} | " + " | ".join(f"{v:.1f} ms" for v in cells) + " |\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="launch samples (B2)")
    parser.add_argument("--quick", action="store_true", help="few runs, write nothing")
    args = parser.parse_args()
    runs = 3 if args.quick else args.runs
    with LocalCluster(slots=2) as cluster:
        first_line, first_metric = measure_launch(cluster, runs)
        harness = measure_harness(cluster, args.quick)
    start = python_start(10)
    first_line_ms, first_metric_ms, start_ms = ms(first_line), ms(first_metric), ms(start)
    call_us: list[float] = list(harness["call_us"])  # type: ignore[call-overload]
    overhead = [o * 100 for o in harness["overhead"]]  # type: ignore[attr-defined]
    print(row("B2 slot -> first line", first_line_ms))
    print(row("B2 submit -> first metric", first_metric_ms))
    print(f"B4 call us: {summary(call_us)}; step overhead %: {summary(overhead)}")
    if args.quick:
        return 0
    command = run_command("python benchmarks/runtime/bench_b2_b4.py", args.runs)
    b2 = (
        "## B2: trial launch latency\n\n"
        + stamp(command)
        + f"- {runs} single-trial experiments submitted one after another to a local cluster "
        "(master + 1 agent, 2 CPU slots, SQLite), each trial a Core API script\n"
        "- target: slot assigned -> first line p50 < 150 ms, p95 < 400 ms; submit -> first "
        "metric < 1 s\n\n"
        "| figure | p50 | p95 | min | max |\n|---|---|---|---|---|\n"
        + row("slot assigned -> first line of user code", first_line_ms)
        + row("submit -> first metric reported", first_metric_ms)
        + row("for scale: `python -c pass` on this machine", start_ms)
    )
    b4 = (
        "## B4: harness cost\n\n"
        + stamp(command)
        + "- measured inside a real trial reporting to the master over loopback; the reporter "
        "thread was sending while the calls were timed\n"
        "- target: < 50 us per `report_training_metrics` call; < 1 % on a 10 ms training step\n\n"
        "| figure | median (min-max) over 5 repeats |\n|---|---|\n"
        f"| `report_training_metrics` call | {summary(call_us)} us |\n"
        "| overhead of reporting every 10 ms step (pure-Python step, GIL held) "
        f"| {summary(overhead)} % |\n"
        f"| reports sent and stored | {harness['stored']} of {harness['reports']} |\n"
    )
    write_section("B2", b2)
    write_section("B4", b4)
    print("wrote the B2 and B4 sections of benchmarks/RESULTS.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
