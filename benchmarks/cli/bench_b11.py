"""B11: how long an ``assay`` command takes, against a running master, next to its floor.

The floor is ``python -c "import typer, rich"`` (the two libraries every command needs), timed in
the same run, interleaved with the commands so that load on the machine hits all of them alike.
Measured, each as a fresh process, as a user's shell starts it (the installed ``assay``
script): ``assay --help`` and ``assay e list`` (against a master holding a few paused
experiments); Determined's own ``det e list`` (determined 0.38.1, ``make det-client``) against
the same master under ``/det``, signed in once beforehand as its users are; and, for scale, a
two-command Typer app: its ``--help`` (Typer's rich help
formatting) and one of its commands with an option (Typer checks such an option's value with
pydantic): what Typer costs on its own, before any assay code. Wall time is what a user waits;
CPU time (user + system) moves less with the machine's load. Target: each assay command within
2.0x the floor's median wall time, and no process of it left behind once it has exited (each
run's environment carries a mark of its own; after every command, ``/proc`` is searched for a
process that carries it).

Where the time of ``assay e list`` goes is measured too: the command run under
``python -X importtime``, the own time of the modules it imports beyond the floor's summed by
package, the median of a few runs; what is not imports is the interpreter's start and the
command's run (its commands built, the request, the table). And by phase: in one process, the
command's imports made one group after another in the order it makes them, then its run.

Byte code is written and used, as it is for an installed package: the variable that turns it
off (``PYTHONDONTWRITEBYTECODE``) is dropped from the commands' environment, and every command
runs once before the timing starts.

    .venv/bin/python benchmarks/cli/bench_b11.py            # writes RESULTS.md
    .venv/bin/python benchmarks/cli/bench_b11.py --quick    # proves it runs; writes nothing
"""

from __future__ import annotations

import argparse
import ast
import collections
import contextlib
import resource
import secrets
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
TARGET = 2.0
ASSAY = "from assay.cli import main; main()"
"""What the installed ``assay`` script runs (when there is no script beside the interpreter)."""

MARK = "ASSAY_B11_RUN"
"""The variable whose value marks the processes a run started."""

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
ASSAY_COMMANDS = ("assay --help", "assay e list")
DET = Path(__file__).resolve().parents[2] / ".venv-det" / "bin" / "det"
DET_LIST = "det e list (Determined 0.38.1's own CLI)"

CONFIG = """
name: b11
entrypoint: python3 train.py
searcher: {name: single, metric: loss, max_length: {batches: 10}}
"""


def assay_argv() -> list[str]:
    python = sys.executable
    script = Path(python).with_name("assay")
    return [str(script)] if script.exists() else [python, "-c", ASSAY]


def commands() -> dict[str, list[str]]:
    """Each command's argv."""
    python = sys.executable
    assay = assay_argv()
    return {
        FLOOR: [python, "-c", "import typer, rich"],
        "assay --help": [*assay, "--help"],
        "assay e list": [*assay, "e", "list"],
        **({DET_LIST: [str(DET), "e", "list"]} if DET.exists() else {}),
        "Typer app --help": [python, "-c", TYPER_APP, "--help"],
        "Typer app one --limit 5": [python, "-c", TYPER_APP, "one", "--limit", "5"],
    }


def submit_experiments(cluster: LocalCluster, count: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "train.py").write_text("print('never run: the experiment stays paused')\n")
        context = pack_context(Path(tmp)).data
    for _ in range(count):
        cluster.client.create_experiment(CONFIG, context, activate=False)


def marked(mark: str) -> list[str]:
    """The command lines of the running processes whose environment holds ``MARK=mark``."""
    needle = f"{MARK}={mark}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                argv = (entry / "cmdline").read_bytes().rstrip(b"\0").split(b"\0")
                found.append(" ".join(a.decode(errors="replace") for a in argv))
    return found


Samples = dict[str, list[float]]


def measure(env: dict[str, str], runs: int) -> tuple[Samples, Samples, list[str]]:
    """Wall and CPU seconds per run of each command, the commands taking turns; and the
    processes any of them left behind."""
    cmds = commands()
    wall: Samples = {name: [] for name in cmds}
    cpu: Samples = {name: [] for name in cmds}
    left: list[str] = []
    for argv in cmds.values():  # Byte code written.
        subprocess.run(argv, env=env, capture_output=True, check=False)
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
            left += [f"after `{name}`: {p}" for p in marked(env[MARK])]
    return wall, cpu, left


WHOLE = "the whole command, under `-X importtime`"
FLOOR_IMPORTS = "imports the floor makes too (typer, rich's package, what they load)"
THE_REST = "the rest: the interpreter's start and the run (commands, request, table)"


def _importtime(argv: list[str], env: dict[str, str]) -> tuple[dict[str, float], float]:
    """Each module's own import milliseconds in one run of ``argv`` under ``-X importtime``,
    and the run's wall milliseconds."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *argv], env=env, capture_output=True, text=True,
        check=True,
    )  # fmt: skip
    wall = (time.perf_counter() - start) * 1000
    own: dict[str, float] = {}
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "self [us]" not in line:
            us, _, name = line.split(":", 1)[1].split("|")
            own[name.strip()] = int(us) / 1000
    return own, wall


def import_groups(env: dict[str, str], runs: int) -> dict[str, float]:
    """Milliseconds of ``assay e list`` by part, the median of ``runs`` runs: the modules it
    imports beyond the floor's, their own time summed by top-level package (``assay.cli``,
    ``assay.client``... for assay's); the floor's own imports; and the rest of its wall
    time."""
    script = Path(sys.executable).with_name("assay")
    run = [str(script)] if script.exists() else ["-c", ASSAY]
    floor = set(_importtime(["-c", "import typer, rich"], env)[0])
    samples: dict[str, list[float]] = collections.defaultdict(list)
    for _ in range(runs):
        own, wall = _importtime([*run, "e", "list"], env)
        groups: collections.Counter[str] = collections.Counter()
        for name, ms_ in own.items():
            parts = name.split(".")
            if name in floor:
                groups[FLOOR_IMPORTS] += ms_
            else:
                groups[".".join(parts[:2]) if parts[0] == "assay" else parts[0]] += ms_
        for group, value in groups.items():
            samples[group].append(value)
        samples[THE_REST].append(wall - sum(groups.values()))
        samples[WHOLE].append(wall)
    # A package some runs did not import counts 0 in those.
    return {g: statistics.median(v + [0.0] * (runs - len(v))) for g, v in samples.items()}


PHASES = """
import sys, time
marks = [time.perf_counter()]
def mark(name):
    marks.append(time.perf_counter())
    names.append(name)
names = []
import typer, rich; mark("typer and rich's package (the floor's imports)")
import assay.cli._app; mark("the command tree (cli/_app, _lazy, _params)")
import rich.console; mark("rich.console")
import assay.cli._common; mark("cli/_common (json, errors, the state enums)")
import assay.cli._experiment, assay.cli._checkpoint; mark("the experiment commands' modules")
import assay.client._client; mark("the client (socket, HTTP, rest's lazy exports)")
import assay.rest._experiments; mark("the experiment answers")
import rich.table, assay.cli._tables; mark("rich.table and cli/_tables")
sys.argv = ["assay", "e", "list"]
from assay.cli import main
try:
    main()
except SystemExit:
    pass
mark("the run: commands built, the request, the table")
timed = [(n, 1000 * (b - a)) for n, a, b in zip(names, marks, marks[1:])]
sys.stderr.write("PHASES " + repr(timed))
"""
"""``assay e list`` in one process, its imports made ahead in the order it makes them, each
phase timed."""


def phases(env: dict[str, str], runs: int) -> dict[str, float]:
    """Milliseconds of each phase of :data:`PHASES`, the median of ``runs`` runs."""
    samples: dict[str, list[float]] = collections.defaultdict(list)
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", PHASES], env=env, capture_output=True, text=True, check=True
        )
        timed = done.stderr.rsplit("PHASES ", 1)[1]
        for name, value in ast.literal_eval(timed):
            samples[name].append(value)
    return {name: statistics.median(values) for name, values in samples.items()}


def phases_table(timed: dict[str, float], runs: int) -> str:
    rows = [
        f"| phase of `assay e list`, timed in one process (median of {runs}) | ms |",
        "|---|---|",
    ]
    rows += [f"| {name} | {value:.1f} |" for name, value in timed.items()]
    return "\n".join(rows)


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


def parts_table(parts: dict[str, float], runs: int) -> str:
    rows = [
        f"| part of `assay e list` (`-X importtime`, median of {runs}) | ms |",
        "|---|---|",
    ]
    beyond = sorted(
        ((k, v) for k, v in parts.items() if k not in (WHOLE, FLOOR_IMPORTS, THE_REST)),
        key=lambda p: -p[1],
    )
    for name, value in beyond:
        if value >= 1.0:
            rows.append(f"| beyond the floor: `{name}` | {value:.1f} |")
    small = sum(v for _, v in beyond if v < 1.0)
    rows.append(f"| beyond the floor: every other module, under 1 ms a package | {small:.1f} |")
    rows.append(f"| **beyond the floor, all imports** | **{sum(v for _, v in beyond):.1f}** |")
    for name in (FLOOR_IMPORTS, THE_REST, WHOLE):
        rows.append(f"| {name} | {parts.get(name, 0.0):.1f} |")
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="samples of each command")
    parser.add_argument("--quick", action="store_true", help="few runs, write nothing")
    args = parser.parse_args()
    runs = 3 if args.quick else args.runs
    part_runs = 3 if args.quick else 7
    with LocalCluster(slots=1) as cluster:
        submit_experiments(cluster, EXPERIMENTS)
        env = dict(cluster.env)
        env["COLUMNS"] = "120"
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env[MARK] = secrets.token_hex(8)
        det_home = tempfile.mkdtemp(prefix="b11-det-")
        env.update(HOME=det_home, DET_MASTER=f"{cluster.url}/det")
        if DET.exists():  # signed in once, as a user is: det keeps the token in its store
            password = cluster.env["ASSAY_ADMIN_PASSWORD"]
            subprocess.run(
                [str(DET), "user", "login", "admin"], input=f"{password}\n", env=env,
                capture_output=True, text=True, check=True,
            )  # fmt: skip
        wall, cpu, left = measure(env, runs)
        parts = import_groups(env, part_runs)
        timed = phases(env, part_runs)
        left += [f"after the breakdown: {p}" for p in marked(env[MARK])]
    result = table(wall, cpu)
    breakdown = parts_table(parts, part_runs) + "\n\n" + phases_table(timed, part_runs)
    print(result)
    print()
    print(breakdown)
    floor = statistics.median(wall[FLOOR])
    verdicts = []
    for name in ASSAY_COMMANDS:
        ratio = statistics.median(wall[name]) / floor
        verdict = "meets" if ratio <= TARGET else "misses"
        verdicts.append(f"- `{name}`: {ratio:.2f}x the floor, {verdict} the {TARGET}x target")
    verdicts.append(
        "- processes left behind by the commands: "
        + (f"{len(left)}, which misses the target: {'; '.join(left)}" if left else "none")
    )
    print("\n".join(verdicts))
    if args.quick:
        return 1 if left else 0
    command = run_command("python benchmarks/cli/bench_b11.py", args.runs)
    body = (
        "## B11: CLI command latency\n\n"
        + stamp(command)
        + f"- a master and one agent on loopback (SQLite), {EXPERIMENTS} paused experiments; "
        "each command a fresh process of the installed `assay` script, the commands taking "
        "turns; byte code written beforehand, as an install writes it\n"
        + f"- target: each assay command within {TARGET}x the floor's median, and no process "
        "left behind by any command (searched for in `/proc` after each one); `det e list` "
        "(Determined's own CLI against the same master's `/det`, signed in once beforehand) "
        "is measured beside them, not held to the target\n\n"
        + result
        + "\n\n"
        + "\n".join(verdicts)
        + "\n\n"
        + breakdown
        + "\n"
    )
    write_section("B11", body)
    print("wrote the B11 section of benchmarks/RESULTS.md")
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
