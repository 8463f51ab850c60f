"""B1 (bookkeeping overhead) and B3 (metric ingestion) for assay and its peers, side by side in
one run: Optuna (in-process threads), Ray Tune (actors reused, and a fresh actor per trial) and
NNI 3.0 (local mode). Each peer runs in a virtual environment of its own, made by this script
with pinned versions under ``benchmarks/peers/.venvs/`` (see ``_venvs.py``).

B1: ``--trials`` trials that each sleep 1 s and report once, on 2 slots; wall / ideal, where
    ideal = trials x 1 s / 2. assay's wall runs from submitting the experiment to seeing it end,
    a fresh process per trial; the peers' from handing them the search to its end.
B3: 16 concurrent trials reporting metrics as fast as they can, end to end (start-up
    included): rows stored per second. assay's rows are durable in SQLite when counted.
Also the timeline of one assay slot (median of each step between consecutive trials), from the
trace marks the master and agent write with ``ASSAY_TRACE=1``.

    .venv/bin/python benchmarks/peers/bench_peers.py            # writes RESULTS.md
    .venv/bin/python benchmarks/peers/bench_peers.py --quick    # assay only, tiny; writes nothing
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks._common import (
    LocalCluster,
    interpreter_start_ms,
    run_command,
    stamp,
    write_section,
)
from benchmarks.api.bench_b7 import database
from benchmarks.peers import _assay
from benchmarks.peers._venvs import PEERS, PeerUnavailable, python_of

RUNNERS = Path(__file__).resolve().parent / "runners"
SLOTS = 2
SLEEP = 1.0
B3_TRIALS = 16
CLI_FORM = "assay, as a user runs it (CLI, searcher operations)"
"""B1's second row: ``assay experiment create`` then ``assay experiment wait``, each trial
looping over ``core.searcher.operations()``, where the first row submits through the client
library and each trial only reads its hyperparameters."""


@dataclass
class Figure:
    system: str
    values: list[float] = field(default_factory=list)
    why_not: str = ""
    note: str = ""

    def cell(self, unit: str = "") -> str:
        if not self.values:
            return f"not measured: {self.why_not}"
        v = self.values
        return f"{statistics.median(v):.3g}{unit} ({min(v):.3g}-{max(v):.3g})"

    @property
    def median(self) -> float:
        return statistics.median(self.values) if self.values else float("nan")


def _peer(peer: str, figure: str, args: list[str]) -> dict[str, float]:
    python = python_of(PEERS[peer])
    result = subprocess.run(
        [str(python), str(RUNNERS / f"{peer}_runner.py"), figure, *args],
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    for line in result.stdout.splitlines():
        if line.startswith("RESULT "):
            answer: dict[str, float] = json.loads(line[len("RESULT ") :])
            return answer
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()] or [f"exit {result.returncode}"]
    raise PeerUnavailable(f"{peer} {figure} failed: {lines[-1].strip()[:200]}")


def _measure(fig: Figure, runs: int, once: Callable[[], float]) -> Figure:
    for i in range(runs):
        try:
            fig.values.append(once())
        except PeerUnavailable as exc:
            fig.why_not = str(exc)
            fig.values.clear()
            break
        print(f"  {fig.system} run {i + 1}/{runs}: {fig.values[-1]:.4g}", flush=True)
    return fig


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each figure (>= 5 to record)")
    parser.add_argument("--trials", type=int, default=40, help="B1 trials")
    parser.add_argument("--rows", type=int, default=1000, help="B3 rows per trial, assay")
    parser.add_argument(
        "--peer-rows", type=int, default=200, help="B3 rows per trial for the peers (slower)"
    )
    parser.add_argument(
        "--peers", default="optuna,ray,nni", help="comma-separated peers to run beside assay"
    )
    parser.add_argument("--timeline-section", default="B1-timeline", help=argparse.SUPPRESS)
    parser.add_argument(
        "--b1-only",
        action="store_true",
        help="assay's B1 and its timeline only (sections B1-assay and the timeline's)",
    )
    parser.add_argument(
        "--b3-only",
        action="store_true",
        help="assay's B3 only, on SQLite and on PostgreSQL (section B3-assay)",
    )
    parser.add_argument("--quick", action="store_true", help="assay only, tiny; write nothing")
    args = parser.parse_args()
    if args.quick:
        print("quick mode: tiny sizes that prove it runs; not comparable with RESULTS.md's figures")
    if args.b3_only:
        return b3_only(args)
    if args.quick:
        runs, trials, sleep, rows, b3_trials, peers = 1, 4, 0.2, 20, 4, []
    else:
        runs, trials, sleep, rows, b3_trials = args.runs, args.trials, SLEEP, args.rows, B3_TRIALS
        peers = [p for p in args.peers.split(",") if p]
    ideal = trials * sleep / SLOTS
    peer_rows = args.peer_rows

    b1: list[Figure] = []
    b3: list[Figure] = []
    speed = interpreter_start_ms()
    cluster = LocalCluster(slots=SLOTS)
    cluster.env["ASSAY_TRACE"] = "1"
    last_exp = 0
    with cluster:

        def assay_b1() -> float:
            nonlocal last_exp
            wall, last_exp = _assay.b1(cluster, trials, sleep)
            return wall / ideal

        b1.append(_measure(Figure("assay, a fresh process per trial"), runs, assay_b1))
        tl = _assay.timeline(cluster, last_exp)
        # As a user runs it: the CLI's two commands, the trials looping over their operations.
        b1.append(
            _measure(
                Figure(CLI_FORM), runs, lambda: _assay.b1_cli(cluster, trials, sleep)[0] / ideal
            )
        )
    if args.b1_only:
        report_b1_only(args, b1[:2], tl, ideal, trials, runs, speed)
        return 0
    with LocalCluster(slots=b3_trials) as big:
        b3.append(
            _measure(
                Figure("assay (SQLite)", note=f"{rows} rows/trial"),
                runs,
                lambda: _assay.b3(big, b3_trials, rows),
            )
        )

    def peer_b1(peer: str, extra: list[str] = []) -> float:  # noqa: B006
        got = _peer(peer, "b1", ["--trials", str(trials), "--slots", str(SLOTS), *extra])
        return got["wall"] / ideal

    def peer_b3(peer: str) -> float:
        got = _peer(peer, "b3", ["--trials", str(b3_trials), "--rows", str(peer_rows)])
        return got["rows"] / got["wall"]

    labels = {
        "optuna": ["Optuna 5.0, in-process threads"],
        "ray": ["Ray Tune 2.60, actors reused", "Ray Tune 2.60, a fresh actor per trial"],
        "nni": ["NNI 3.0, local mode"],
    }
    b3_labels = {
        "optuna": "Optuna 5.0 (SQLite storage, threads)",
        "ray": "Ray Tune 2.60",
        "nni": "NNI 3.0, local mode",
    }
    for peer in peers:
        try:
            python_of(PEERS[peer])
        except PeerUnavailable as exc:
            for label in labels[peer]:
                b1.append(Figure(label, why_not=str(exc)))
            b3.append(Figure(b3_labels[peer], why_not=str(exc)))
            continue
        if peer == "ray":
            b1.append(_measure(Figure(labels[peer][0]), runs, lambda: peer_b1("ray", ["--reuse"])))
            b1.append(_measure(Figure(labels[peer][1]), runs, lambda: peer_b1("ray")))
        else:
            b1.append(_measure(Figure(labels[peer][0]), runs, lambda p=peer: peer_b1(p)))  # type: ignore[misc]
        note = f"{peer_rows} rows/trial"
        b3.append(_measure(Figure(b3_labels[peer], note=note), runs, lambda p=peer: peer_b3(p)))  # type: ignore[misc]

    report(args, b1, b3, tl, ideal, trials, rows, b3_trials, runs, speed)
    return 0


def b3_only(args: argparse.Namespace) -> int:
    """assay's B3 alone, on each database (``--b3-only``): the peers' table is left as its last
    full run wrote it."""
    import psycopg

    runs, rows = (1, 20) if args.quick else (args.runs, args.rows)
    speed = interpreter_start_ms()
    figures = []
    for kind, label in (("sqlite", "SQLite"), ("postgresql", "PostgreSQL")):
        figure = Figure(f"assay ({label})", note=f"{rows} rows/trial")
        try:
            with (
                tempfile.TemporaryDirectory() as home,
                database(kind, Path(home)) as url,
                LocalCluster(slots=B3_TRIALS, db=url) as cluster,
            ):
                _measure(figure, runs, lambda c=cluster: _assay.b3(c, B3_TRIALS, rows))  # type: ignore[misc]
        except psycopg.OperationalError as exc:
            figure.why_not = f"no {label} server to measure on: {exc}"
        figures.append(figure)
    table = "| database | size | rows/s, end to end |\n|---|---|---|\n" + "\n".join(
        f"| {f.system} | {f.note} | {f.cell()} |" for f in figures
    )
    print(table)
    if args.quick:
        return 0
    command = run_command(
        "python benchmarks/peers/bench_peers.py --b3-only"
        + (f" --runs {runs}" if runs != 5 else "")
        + (f" --rows {rows}" if rows != 1000 else ""),
        0,
        0,
    )
    write_section(
        "B3-assay",
        "## B3: assay alone, on SQLite and PostgreSQL (`--b3-only`)\n\n"
        + stamp(command)
        + _speed_line(speed)
        + f"- {B3_TRIALS} concurrent trials reporting as fast as they can, every row checked "
        f"stored, rows/s end to end (start-up included); median (min-max) of {runs} runs; a "
        "fresh database each (PostgreSQL at `ASSAY_TEST_PG_URL`, made and dropped)\n\n"
        + table
        + "\n",
    )
    print("wrote the B3-assay section of benchmarks/RESULTS.md")
    return 0


def _speed_line(speed: float) -> str:
    return (
        f"- this machine's speed: `python -I -c pass` starts in {speed:.1f} ms (median of 15); "
        "figures from machines that differ in it are not comparable as they stand\n"
    )


def _timeline_table(tl: _assay.Timeline) -> str:
    steps = "\n".join(f"| {label} | {v:.1f} ms |" for label, v in tl.steps.items())
    return (
        "| step (one slot, from a trial's sleep ending) | median |\n|---|---|\n"
        + steps
        + f"\n| **sleep's end to the next trial's sleep start** | **{tl.gap_ms:.1f} ms** |\n"
    )


def _write_timeline(
    args: argparse.Namespace, command: str, speed: float, tl: _assay.Timeline
) -> None:
    write_section(
        args.timeline_section,
        f"## B1: timeline of one assay slot ({args.timeline_section})\n\n"
        + stamp(command)
        + _speed_line(speed)
        + f"- from the last B1 run's trace marks (`ASSAY_TRACE=1`), {tl.gaps} gaps between "
        "consecutive trials on a slot\n\n" + _timeline_table(tl),
    )


def report_b1_only(
    args: argparse.Namespace,
    figures: list[Figure],
    tl: _assay.Timeline,
    ideal: float,
    trials: int,
    runs: int,
    speed: float,
) -> None:
    """assay's B1 alone (``--b1-only``): the peers' table is left as its last full run wrote it."""
    shown = "\n".join(f"{f.system}: {f.cell('x')}" for f in figures)
    print(shown, _timeline_table(tl), sep="\n\n")
    if args.quick:
        return
    command = run_command(
        "python benchmarks/peers/bench_peers.py --b1-only"
        + (f" --runs {runs}" if runs != 5 else ""),
        0,
        0,
    )
    write_section(
        "B1-assay",
        "## B1: assay alone (`--b1-only`)\n\n"
        + stamp(command)
        + _speed_line(speed)
        + f"- {trials} trials that sleep 1 s and report once, 2 slots, ideal {ideal:.0f} s; "
        f"median (min-max) of {runs} runs\n"
        + "- as a user runs it: `assay experiment create --json CONFIG CONTEXT`, then `assay "
        "experiment wait ID`, timed from the first command's start to the second's end; each "
        "trial loops over `core.searcher.operations()` (one operation of one step), reports "
        "its validation and marks the operation completed\n\n"
        + "| system | wall / ideal |\n|---|---|\n"
        + "".join(f"| {f.system} | {f.cell('x')} |\n" for f in figures),
    )
    _write_timeline(args, command, speed, tl)
    print(f"wrote the B1-assay and {args.timeline_section} sections of benchmarks/RESULTS.md")


def report(
    args: argparse.Namespace,
    b1: list[Figure],
    b3: list[Figure],
    tl: _assay.Timeline,
    ideal: float,
    trials: int,
    rows: int,
    b3_trials: int,
    runs: int,
    speed: float,
) -> None:
    base1, base3 = b1[0].median, b3[0].median
    lines = [
        f"| {f.system} | {f.cell('x')} | " + (f"{f.median / base1:.2f} |" if f.values else "- |")
        for f in b1
    ]
    b1_table = "| system | wall / ideal | ÷ assay's |\n|---|---|---|\n" + "\n".join(lines)
    lines = [
        f"| {f.system} | {f.note} | {f.cell()} | "
        + (f"{base3 / f.median:.2f} |" if f.values else "- |")
        for f in b3
    ]
    b3_table = (
        "| system | size | rows/s, end to end | assay's ÷ this |\n|---|---|---|---|\n"
        + "\n".join(lines)
    )
    timeline = _timeline_table(tl)
    print(b1_table, b3_table, timeline, sep="\n\n")
    if args.quick:
        return
    parts = ["python benchmarks/peers/bench_peers.py"]
    if runs != 5:
        parts.append(f"--runs {runs}")
    if args.peers != "optuna,ray,nni":
        parts.append(f"--peers {args.peers}")
    command = run_command(" ".join(parts), 0, 0)
    speed_line = _speed_line(speed)
    body = (
        "## B1 and B3 beside the peers (one run, same machine)\n\n"
        + stamp(command)
        + speed_line
        + f"- B1: {trials} trials that sleep 1 s and report once, 2 slots, ideal {ideal:.0f} s; "
        f"median (min-max) of {runs} runs; the last column is the system's figure over assay's\n"
        f"- B3: {b3_trials} concurrent trials reporting as fast as they can, rows/s end to end "
        "(start-up included); the peers report fewer rows per trial (they are slower), so their "
        "start-up weighs more; the last column is assay's rate over the system's\n"
        "- the peers run in their own virtual environments (pinned versions) made by the "
        "benchmark; the machine is shared, so compare the ratios, not the absolute times\n\n"
        "### B1: bookkeeping overhead\n\n"
        + b1_table
        + "\n\n### B3: metric ingestion\n\n"
        + b3_table
        + "\n"
    )
    write_section("B1-B3-peers", body)
    _write_timeline(args, command, speed, tl)
    print(f"wrote the B1-B3-peers and {args.timeline_section} sections of benchmarks/RESULTS.md")


if __name__ == "__main__":
    sys.exit(main())
