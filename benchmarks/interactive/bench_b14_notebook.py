"""B14: notebook start -> JupyterLab answering through the master's proxy, on a warm agent
without a container.

Each start is `POST /api/v1/notebooks` (one slot) on a local cluster (master + 1 agent with 1
slot, SQLite); the clock stops at the first `200` of `GET /proxy/ID/api/status` through the
master, polled every 50 ms with the owner's token. The notebook is then killed and its slot
waited for, so every start finds the agent as the first did (one start before the measured ones
warms the agent's file cache). Figures: p50 and p95 over the starts, and the part of each that
was the task's start (submit -> its process running on the agent).

    .venv/bin/python benchmarks/interactive/bench_b14_notebook.py          # writes RESULTS.md
    .venv/bin/python benchmarks/interactive/bench_b14_notebook.py --quick  # 1; writes nothing
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from assay.errors import AssayError
from benchmarks._common import (
    LocalCluster,
    ms,
    percentile,
    run_command,
    stamp,
    write_section,
)

_POLL = 0.05
_TIMEOUT = 120.0


def one_start(cluster: LocalCluster) -> tuple[float, float]:
    """Seconds from the start request to (JupyterLab answering through the proxy, the task's
    process running)."""
    client = cluster.client
    began = time.perf_counter()
    book = client.start_notebook("description: b14\n")
    running_after: float | None = None
    deadline = began + _TIMEOUT
    while True:
        if running_after is None and client.notebook(book.id).ready:
            running_after = time.perf_counter() - began
        try:
            client.http.get(f"{book.url}api/status")
            answered = time.perf_counter() - began
            break
        except AssayError as exc:
            if time.perf_counter() > deadline:
                message = f"notebook {book.id} did not answer; see {cluster.home}"
                raise RuntimeError(message) from exc
            time.sleep(_POLL)
    client.kill_notebook(book.id)
    while not client.notebook(book.id).state.terminal:
        time.sleep(_POLL)
    while any(s.allocated for a in client.agents() for s in a.slots):
        time.sleep(_POLL)
    return answered, running_after if running_after is not None else answered


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="measured starts")
    parser.add_argument("--quick", action="store_true", help="1 start; write nothing")
    args = parser.parse_args()
    runs = 1 if args.quick else args.runs
    answered: list[float] = []
    running: list[float] = []
    with LocalCluster(slots=1) as cluster:
        if not args.quick:
            one_start(cluster)  # warms the agent's file cache; not counted
        for i in range(runs):
            whole, started = one_start(cluster)
            answered.append(whole)
            running.append(started)
            print(f"start {i + 1}: answering after {whole * 1000:.0f} ms", flush=True)
    a, r = ms(answered), ms(running)
    print(f"B14 p50 {percentile(a, 50):.0f} ms, p95 {percentile(a, 95):.0f} ms")
    if args.quick:
        return 0
    body = (
        "## B14: notebook start -> answering through the proxy\n\n"
        + stamp(run_command("python benchmarks/interactive/bench_b14_notebook.py", runs, 10))
        + "- a local cluster (master + 1 agent with 1 slot, SQLite), no container; each start "
        "is `POST /api/v1/notebooks`, timed to the first 200 of `GET /proxy/ID/api/status` "
        f"through the master (polled every 50 ms); the notebook is killed and its slot freed "
        f"before the next; {runs} starts after one not counted\n"
        "- target: p50 <= 5 s on a warm agent without a container (Determined starts a "
        "container per notebook: tens of seconds)\n\n"
        "| figure | p50 | p95 | min | max |\n|---|---|---|---|---|\n"
        f"| start -> JupyterLab answering through the proxy | {percentile(a, 50):.0f} ms | "
        f"{percentile(a, 95):.0f} ms | {min(a):.0f} ms | {max(a):.0f} ms |\n"
        f"| of which: start -> its process running on the agent | {percentile(r, 50):.0f} ms | "
        f"{percentile(r, 95):.0f} ms | {min(r):.0f} ms | {max(r):.0f} ms |\n"
    )
    write_section("B14", body)
    print("wrote the B14 section of benchmarks/RESULTS.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
