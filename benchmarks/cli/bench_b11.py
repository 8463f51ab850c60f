"""B11: how long an ``assay`` command takes, against a running master, next to its floor.

The floor is ``python -c "import typer, rich"`` (the two libraries every command needs), timed in
the same run, interleaved with the commands so that load on the machine hits all of them alike.
Measured, each as a fresh process, as a user's shell starts it:
  * ``assay --help``;
  * ``assay e list`` against a master holding a few (paused) experiments;
  * for scale, a two-command Typer app: its ``--help`` (Typer's rich help formatting) and one of
    its commands with an option (Typer checks options with pydantic): what Typer costs on its
    own, before any assay code.
Wall time is what a user waits; CPU time (user + system, of the command's process) moves less
with the machine's load. Target: each assay command within 1.5x the floor's median wall time.

    .venv/bin/python benchmarks/cli/bench_b11.py            # writes RESULTS.md
    .venv/bin/python benchmarks/cli/bench_b11.py --quick    # proves it runs; writes nothing
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks._common import LocalCluster, ms, run_command, stamp, summary, write_section

from assay.context import pack_context

EXPERIMENTS = 5
TARGET = 1.5
ASSAY = "from assay.cli import main; main()"
"""What the installed ``assay`` script runs."""

TYPER_APP = '''
import typer
app = typer.Typer()
@app.command()
def one(limit: int = 100) -> None:
    """One."""
@app.command()
def two() -> None:
    """Two."""
app()
'''

FLOOR = 'python -c "import typer, rich" (floor)'

CONFIG = """
name: b11
entrypoint: python3 train.py
searcher: {name: single, metric: loss, max_length: {batches: 10}}
"""


def commands() -> dict[str, list[str]]:
    python = sys.executable
    return {
        FLOOR: [python, "-c", "import typer, rich"],
        "assay --help": [python, "-c", ASSAY, "--help"],
        "assay e list": [python, "-c", ASSAY, "e", "list"],
        "Typer app --help": [python, "-c", TYPER_APP, "--help"],
        "Typer app one --limit 5": [python, "-c", TYPER_APP, "one", "--limit", "5"],
    }


def submit_experiments(cluster: LocalCluster, count: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "train.py").write_text("print('never run: the experiment stays paused')\n")
        context = pack_context(Path(tmp)).data
    for _ in range(count):
        cluster.client.create_experiment(CONFIG, context, activate=False)


Samples = dict[str, list[float]]


def measure(env: dict[str, str], runs: int) -> tuple[Samples, Samples]:
    """Wall and CPU seconds per run of each command, the commands taking turns."""
    cmds = commands()
    wall: Samples = {name: [] for name in cmds}
    cpu: Samples = {name: [] for name in cmds}
    for _ in range(runs):
        for name, argv in cmds.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            done = subprocess.run(argv, env=env, capture_output=True, check=False)
            wall[name].append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            used = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            cpu[name].append(used)
            if done.returncode != 0:
                raise RuntimeError(f"{name} exited {done.returncode}: {done.stderr.decode()}")
    return wall, cpu


def table(wall: Samples, cpu: Samples) -> str:
    floor_wall = statistics.median(wall[FLOOR])
    floor_cpu = statistics.median(cpu[FLOOR])
    rows = [
        "| command | wall, ms: median (min-max) | x floor | CPU, ms: median (min-max) "
        "| x floor | runs |",
        "|---|---|---|---|---|---|",
    ]
    for name in wall:
        rows.append(
            f"| `{name}` | {summary(ms(wall[name]))} "
            f"| {statistics.median(wall[name]) / floor_wall:.2f} "
            f"| {summary(ms(cpu[name]))} "
            f"| {statistics.median(cpu[name]) / floor_cpu:.2f} | {len(wall[name])} |"
        )
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="samples of each command")
    parser.add_argument("--quick", action="store_true", help="few runs, write nothing")
    args = parser.parse_args()
    runs = 3 if args.quick else args.runs
    with LocalCluster(slots=1) as cluster:
        submit_experiments(cluster, EXPERIMENTS)
        env = dict(cluster.env)
        env["COLUMNS"] = "120"
        wall, cpu = measure(env, runs)
    result = table(wall, cpu)
    print(result)
    if args.quick:
        return 0
    command = run_command("python benchmarks/cli/bench_b11.py", args.runs)
    floor = statistics.median(wall[FLOOR])
    verdicts = []
    for name in ("assay --help", "assay e list"):
        ratio = statistics.median(wall[name]) / floor
        verdict = "meets" if ratio <= TARGET else "misses"
        verdicts.append(f"- `{name}`: {ratio:.2f}x the floor, {verdict} the {TARGET}x target")
    body = (
        "## B11: CLI command latency\n\n"
        + stamp(command)
        + f"- a master and one agent on loopback (SQLite), {EXPERIMENTS} paused experiments; "
        "each command a fresh process, as the `assay` script runs it, the commands taking "
        "turns\n"
        + f"- target: each assay command within {TARGET}x the floor's median\n\n"
        + result
        + "\n\n"
        + "\n".join(verdicts)
        + "\n"
    )
    write_section("B11", body)
    print("wrote the B11 section of benchmarks/RESULTS.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
