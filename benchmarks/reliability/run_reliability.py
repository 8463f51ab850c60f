"""Reliability and security run: real masters and agents on loopback, attacked and broken on
purpose, with what survived counted.

Parts (``--only`` picks some, comma-separated):

- ``chaos``: `kill -9` of the master mid-ASHA on SQLite and PostgreSQL, and PostgreSQL's
  backends terminated mid-run: trials finished, metrics lost or stored twice, restarts counted,
  dangling checkpoints;
- ``agents``: `kill -9` of an agent, and an agent frozen 90 s (SIGSTOP) then woken, with a
  second agent to take its trials: restarts counted, copies that run on after their trial was
  started elsewhere, metrics and checkpoints taken from a fenced copy;
- ``hostile``: a corpus of hostile submissions through the API (a sample through the CLI), each
  answer classified (refused cleanly, accepted, 5xx, traceback, hang);
- ``probes``: security probes as a user who is not an admin (the master's own files through a
  hostile trial's checkpoints, a trial token on another user's experiment, requests to a
  user-chosen s3 endpoint, `assay up` after `assay down`);
- ``fuzz``: schemathesis against the live master's OpenAPI, signed in and signed out.

Each part starts its own processes on free loopback ports in temporary directories and ends
them (by pid) and removes the directories when it is done. PostgreSQL is the one of
``ASSAY_TEST_PG_URL`` (default ``postgresql+psycopg://postgres@127.0.0.1:5432/test``); the run
creates and drops databases of its own there.

    .venv/bin/python benchmarks/reliability/run_reliability.py            # writes RESULTS.md
    .venv/bin/python benchmarks/reliability/run_reliability.py --quick    # small; writes nothing
    .venv/bin/python benchmarks/reliability/run_reliability.py --only hostile,probes

A figure that shows a defect is printed as ``FAILURE: ...`` and listed as such in RESULTS.md.
The exit status is 0 when the run completed, whatever it found (``--strict``: 1 when it found a
failure); 2 when a part could not run.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks._common import RESULTS, stamp, write_section
from benchmarks.reliability import _agents, _chaos, _fuzz, _hostile, _probes
from benchmarks.reliability._cluster import TRACKER, postgres_problem
from benchmarks.reliability._report import Part

SECTION = "RELIABILITY"
PARTS: dict[str, str] = {
    "chaos": "Master restarts and database loss",
    "agents": "Agent loss",
    "hostile": "Hostile input",
    "probes": "Security probes",
    "fuzz": "Fuzzing",
}
TITLE = "## Reliability and security (`benchmarks/reliability/run_reliability.py`)"


def _part_key(name: str) -> str:
    return f"{SECTION}-{name}"


def _outer() -> str:
    blocks = "\n\n".join(
        f"<!-- {_part_key(n)}:start -->\n### {t}\n\nNot run yet.\n<!-- {_part_key(n)}:end -->"
        for n, t in PARTS.items()
    )
    return (
        f"{TITLE}\n\nWhat survives when the master, its database and its agents are killed, "
        "frozen or cut off mid-run, and what the master answers to hostile input, probes and "
        "fuzzing. Each part below records its own run (a run of some parts, `--only`, "
        "rewrites those). A figure that shows a defect is listed as a **FAILURE**. For "
        "comparison, an earlier run on main, made without a script, reported: 3 `kill -9` of "
        "the master mid-ASHA on SQLite and PostgreSQL with 16/16 trials finished, 0 of 138 "
        "metrics lost or duplicated, 0 restarts counted, 0 dangling checkpoints; 66 PostgreSQL "
        "backends terminated with nothing lost; 184 hostile submissions, 167 refused cleanly, "
        f"0 tracebacks, 0 hangs.\n\n{blocks}"
    )


def record(parts: list[Part], command: str, path: Path = RESULTS) -> None:
    """The parts' sections of ``path``, inside this run's section (made when absent)."""
    if f"<!-- {SECTION}:start -->" not in (path.read_text() if path.exists() else ""):
        write_section(SECTION, _outer(), path)
    for part in parts:
        body = f"### {part.title}\n\n{stamp(command)}\n{part.markdown()}"
        write_section(_part_key(part.key), body, path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes; write nothing")
    parser.add_argument(
        "--only", default=",".join(PARTS), help=f"comma-separated parts of {', '.join(PARTS)}"
    )
    parser.add_argument("--strict", action="store_true", help="exit 1 when a failure was found")
    parser.add_argument(
        "--freeze-seconds",
        type=float,
        default=None,
        help="how long the agent part keeps an agent frozen (default 90; the quick mode "
        "freezes none unless this is given)",
    )
    args = parser.parse_args()
    chosen = [p.strip() for p in args.only.split(",") if p.strip()]
    unknown = [p for p in chosen if p not in PARTS]
    if unknown:
        parser.error(f"unknown part(s) {unknown}; choose from {', '.join(PARTS)}")

    # SIGTERM and SIGHUP end the run as Ctrl-C does: what it started is ended on the way out.
    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)

    postgres = postgres_problem()
    runners: dict[str, Callable[[Part], None]] = {
        "chaos": lambda part: _chaos.run(part, quick=args.quick, postgres=postgres),
        "agents": lambda part: _agents.run(
            part, quick=args.quick, freeze_seconds=args.freeze_seconds
        ),
        "hostile": lambda part: _hostile.run(part, quick=args.quick),
        "probes": lambda part: _probes.run(part, quick=args.quick),
        "fuzz": lambda part: _fuzz.run(part, quick=args.quick),
    }
    parts: list[Part] = []
    broken: list[str] = []
    try:
        for name in [p for p in PARTS if p in chosen]:
            part = Part(name, PARTS[name])
            print(f"\n=== {part.title} ===", flush=True)
            started = time.monotonic()
            part.add(f"- load average (1 min) when this part began: {os.getloadavg()[0]:.2f}\n")
            try:
                runners[name](part)
            except KeyboardInterrupt:
                raise
            except Exception as exc:
                # The part could not finish: said, and recorded as a failure, not as figures.
                traceback.print_exc()
                part.fail(f"the part did not finish: {type(exc).__name__}: {exc}")
                broken.append(name)
            finally:
                TRACKER.cleanup()
            part.add(f"\n- wall time of this part: {time.monotonic() - started:.0f} s")
            parts.append(part)
    finally:
        TRACKER.cleanup()

    failures = [f"{p.key}: {f}" for p in parts for f in p.failures]
    print(f"\n=== {len(failures)} failure(s) ===", flush=True)
    for failure in failures:
        print(f"FAILURE: {failure}", flush=True)
    if not args.quick:
        command = "python benchmarks/reliability/run_reliability.py"
        if set(chosen) != set(PARTS):
            command += f" --only {','.join(chosen)}"
        if args.freeze_seconds is not None:
            command += f" --freeze-seconds {args.freeze_seconds:g}"
        record(parts, command)
        print("wrote the reliability section of benchmarks/RESULTS.md", flush=True)
    if broken:
        return 2
    return 1 if args.strict and failures else 0


if __name__ == "__main__":
    sys.exit(main())
