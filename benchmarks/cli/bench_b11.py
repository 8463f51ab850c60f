"""B11: how long an ``assay`` command takes, against a running master, next to its floor.

The floor is ``python -c "import typer, rich"`` (the two libraries every command needs), timed in
the same run, interleaved with the commands so that load on the machine hits all of them alike.
Measured, each as a fresh process, as a user's shell starts it (the installed ``assay``
script):
  * ``assay --help`` and ``assay e list`` (against a master holding a few paused experiments),
    as users run them: handed to the command server (``assay.cli._served``), which the first
    command started and which is warm by the time they are timed;
  * ``assay e list`` with the server off (``ASSAY_CLI_SERVER=off``): what a command costs in a
    process of its own, which is also what the first command of all costs;
  * for scale, a two-command Typer app: its ``--help`` (Typer's rich help formatting) and one of
    its commands with an option (Typer checks options with pydantic): what Typer costs on its
    own, before any assay code.
Wall time is what a user waits; CPU time (user + system, of the command's process) moves less
with the machine's load, but a served command's CPU is mostly spent in the server's child, which
is not the command's process and not counted. Target: each assay command within 1.5x the
floor's median wall time.

Byte code is written and used, as it is for an installed package: the variable that turns it
off (``PYTHONDONTWRITEBYTECODE``) is dropped from the commands' environment, and every command
runs once before the timing starts.

    .venv/bin/python benchmarks/cli/bench_b11.py            # writes RESULTS.md
    .venv/bin/python benchmarks/cli/bench_b11.py --quick    # proves it runs; writes nothing
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import signal
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
"""What the installed ``assay`` script runs (when there is no script beside the interpreter)."""

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


ALONE = "assay e list, server off"


def commands() -> dict[str, tuple[list[str], dict[str, str]]]:
    """Each command: its argv and what it adds to the environment."""
    python = sys.executable
    script = Path(python).with_name("assay")
    assay = [str(script)] if script.exists() else [python, "-c", ASSAY]
    return {
        FLOOR: ([python, "-c", "import typer, rich"], {}),
        "assay --help": ([*assay, "--help"], {}),
        "assay e list": ([*assay, "e", "list"], {}),
        ALONE: ([*assay, "e", "list"], {"ASSAY_CLI_SERVER": "off"}),
        "Typer app --help": ([python, "-c", TYPER_APP, "--help"], {}),
        "Typer app one --limit 5": ([python, "-c", TYPER_APP, "one", "--limit", "5"], {}),
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
    for argv, extra in cmds.values():  # Byte code written; the command server started.
        subprocess.run(argv, env={**env, **extra}, capture_output=True, check=False)
    time.sleep(3)
    for _ in range(runs):
        for name, (argv, extra) in cmds.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            done = subprocess.run(argv, env={**env, **extra}, capture_output=True, check=False)
            wall[name].append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            used = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            cpu[name].append(used)
            if done.returncode != 0:
                raise RuntimeError(f"{name} exited {done.returncode}: {done.stderr.decode()}")
    return wall, cpu


def stop_servers(runtime: Path) -> None:
    """Stops the command servers whose sockets are in ``runtime`` (their pids are in the locks)."""
    for lock in runtime.glob("assay/*.lock"):
        with contextlib.suppress(ValueError, OSError):
            os.kill(int(lock.read_text().strip()), signal.SIGTERM)


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
    with LocalCluster(slots=1) as cluster, tempfile.TemporaryDirectory() as runtime:
        submit_experiments(cluster, EXPERIMENTS)
        env = dict(cluster.env)
        env["COLUMNS"] = "120"
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.pop("ASSAY_CLI_SERVER", None)
        # A command server of this run's own, stopped at its end.
        env["XDG_RUNTIME_DIR"] = runtime
        try:
            wall, cpu = measure(env, runs)
        finally:
            stop_servers(Path(runtime))
    result = table(wall, cpu)
    print(result)
    if args.quick:
        return 0
    command = run_command("python benchmarks/cli/bench_b11.py", args.runs)
    floor = statistics.median(wall[FLOOR])
    verdicts = []
    for name in ("assay --help", "assay e list", ALONE):
        ratio = statistics.median(wall[name]) / floor
        verdict = "meets" if ratio <= TARGET else "misses"
        verdicts.append(f"- `{name}`: {ratio:.2f}x the floor, {verdict} the {TARGET}x target")
    body = (
        "## B11: CLI command latency\n\n"
        + stamp(command)
        + f"- a master and one agent on loopback (SQLite), {EXPERIMENTS} paused experiments; "
        "each command a fresh process of the installed `assay` script, the commands taking "
        "turns; byte code written beforehand, as an install writes it\n"
        "- `assay --help` and `assay e list` handed to the command server (warm); "
        "`server off`: the command in a process of its own, as the first command of all runs; "
        "the CPU column counts the `assay` process only, not the server's child\n"
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
