"""Shared by the benchmarks: a local cluster of real processes, statistics, and RESULTS.md."""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import platform
import re
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from assay.client import Client, StoredLogin, TokenStore
from assay.errors import AssayError
from assay.ports import free_port

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
HEADER = (
    "# Benchmark results\n\n"
    "Figures written by the scripts in `benchmarks/`; each section says how it was made.\n"
)

# Timings on a shared machine move with its load; each section records the load its run met.
LOAD_AT_START = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def machine() -> str:
    model = platform.processor() or "unknown CPU"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return (
        f"{model}, {os.cpu_count()} cores visible (shared with other work), "
        f"Python {platform.python_version()}, {platform.system()} {platform.release()}"
    )


def interpreter_start_ms(runs: int = 15) -> float:
    """This machine's speed in one figure: the median milliseconds of ``python -I -c pass``
    (figures taken on machines whose figure differs are not comparable as they stand)."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-I", "-c", "pass"], check=True)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _code_version() -> str:
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=root, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if head.returncode != 0:
            return "unknown (not a git checkout)"
        # The figures a run writes are not the code it ran.
        code = ["src", "benchmarks", ":(exclude)benchmarks/RESULTS.md"]
        changed = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=normal", "--", *code],
            cwd=root, capture_output=True, text=True, check=False,
        )  # fmt: skip
    except OSError:
        return "unknown (no git)"
    return head.stdout.strip() + (" with uncommitted changes" if changed.stdout.strip() else "")


CODE_AT_START = _code_version()
"""The commit a benchmark began at (read when it starts: a long run outlives commits made
during it), marked when the code differed from it."""


def stamp(command: str) -> str:
    today = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"- machine: {machine()}\n- date: {today}\n- code: {CODE_AT_START}\n"
        f"- command: `{command}`\n"
        f"- load average (1 min) when the run began: {LOAD_AT_START:.2f}\n"
    )


def write_section(key: str, body: str, path: Path = RESULTS) -> None:
    """Replace the section between ``<!-- key:start -->`` and ``<!-- key:end -->`` (appending it
    when absent), leaving the other sections as they are."""
    text = path.read_text() if path.exists() else HEADER
    block = f"<!-- {key}:start -->\n{body.rstrip()}\n<!-- {key}:end -->"
    pattern = re.compile(rf"<!-- {re.escape(key)}:start -->.*?<!-- {re.escape(key)}:end -->", re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: block, text)
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text)


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def ms(values: Sequence[float]) -> list[float]:
    """Seconds to milliseconds."""
    return [v * 1000 for v in values]


def command_of(
    script: str, parser: argparse.ArgumentParser, args: argparse.Namespace, *, internal: set[str]
) -> str:
    """The command line that reproduces a run: ``script`` with every option given a value
    other than its default (``internal``: options that are not the user's to give)."""
    defaults = vars(parser.parse_args([]))
    return script + "".join(
        f" --{name.replace('_', '-')}" + ("" if value is True else f" {value}")
        for name, value in vars(args).items()
        if name in defaults and value != defaults[name] and name not in internal
    )


def run_command(script: str, runs: int, default_runs: int = 30) -> str:
    """The command line that reproduces a run (``--runs`` only when not the default)."""
    return script if runs == default_runs else f"{script} --runs {runs}"


def summary(values: Sequence[float]) -> str:
    """``median (min-max)`` of a sample."""
    return f"{statistics.median(values):.3g} ({min(values):.3g}-{max(values):.3g})"


class LocalCluster:
    """A master and one agent as real processes on loopback, in a throw-away home."""

    def __init__(self, slots: int = 2, db: str | None = None) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="assay-bench-"))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.slots = slots
        self.db = db
        self.procs: list[subprocess.Popen[bytes]] = []
        self.client = Client(self.url, timeout=60)
        self.env = {
            **os.environ,
            "ASSAY_HOME": str(self.home),
            "ASSAY_MASTER": self.url,
            "ASSAY_ADMIN_PASSWORD": secrets.token_urlsafe(12),
            "ASSAY_AGENT_TOKEN": secrets.token_urlsafe(12),
            # `assay` commands run with this environment find the admin's sign-in here.
            "XDG_CONFIG_HOME": str(self.home / "config"),
        }

    def __enter__(self) -> LocalCluster:
        env = self.env
        master = [
            sys.executable,
            "-m",
            "assay.api",
            "--port",
            str(self.port),
            "--home",
            str(self.home),
        ]
        if self.db:
            master += ["--db", self.db]
        log = (self.home / "master.log").open("ab")
        self.procs.append(subprocess.Popen(master, env=env, stdout=log, stderr=subprocess.STDOUT))
        self._wait(lambda: bool(self.client.info()))
        session = self.client.login("admin", env["ASSAY_ADMIN_PASSWORD"])
        store = TokenStore(self.home / "config" / "assay" / "auth.json")
        store.put(self.url, StoredLogin("admin", session.token))
        agent = [
            sys.executable, "-m", "assay.agent", "--master", self.url, "--id", "bench",
            "--slots", str(self.slots), "--home", str(self.home),
        ]  # fmt: skip
        log = (self.home / "agent.log").open("ab")
        self.procs.append(subprocess.Popen(agent, env=env, stdout=log, stderr=subprocess.STDOUT))
        self._wait(lambda: any(a.connected for a in self.client.agents()))
        return self

    def _wait(self, ready: object, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(AssayError):
                if ready():  # type: ignore[operator]
                    return
            time.sleep(0.05)
        raise RuntimeError(f"cluster did not start; see {self.home}")

    def __exit__(self, *exc: object) -> None:
        for proc in reversed(self.procs):
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
        self.client.close()
        shutil.rmtree(self.home, ignore_errors=True)

    def wait_done(self, experiment_id: int, timeout: float = 600.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.client.wait(experiment_id, 30)
            if state in ("COMPLETED", "CANCELED", "ERROR"):
                return state
        raise RuntimeError(f"experiment {experiment_id} did not end within {timeout}s")


@contextlib.contextmanager
def cluster(slots: int = 2) -> Iterator[LocalCluster]:
    with LocalCluster(slots) as c:
        yield c
