"""optuna-dashboard, B7's peer in the browser: an Optuna RDB study (SQLite) of the same shape as
B7's experiment, served by ``optuna-dashboard`` on loopback and timed in headless Chromium.

The study is made by Optuna itself (its schema, its first trial); the other trials are copied
into its tables with ``sqlite3``, as B7's rows are (Optuna's own ``add_trial`` writes a trial at
a time: hours for 50,000). Each trial: one hyperparameter, a final value, and ``points``
intermediate values (Optuna keeps one series per trial).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import random
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.api.bench_b7_ui import CHROMIUM, CHROMIUM_ARGS, process, timed_visit
from benchmarks.peers._venvs import PEERS, PeerUnavailable, python_of

from assay.ports import free_port

LIMIT_S = 120.0
"""How long a page load may take before it counts as not done."""

_MAKE_STUDY = """
import sys, optuna
optuna.logging.set_verbosity(optuna.logging.WARNING)
study = optuna.create_study(storage=sys.argv[1], study_name="b7", direction="minimize")
lr = optuna.distributions.FloatDistribution(1e-5, 0.1, log=True)
study.add_trial(optuna.trial.create_trial(
    params={"lr": 0.01}, distributions={"lr": lr}, value=1.0, intermediate_values={10: 1.0}))
"""


def make_study(path: Path, trials: int, points: int, seed: int = 7) -> None:
    """An Optuna study of ``trials`` trials, ``points`` intermediate values each, at ``path``."""
    python = python_of(PEERS["optuna-dashboard"])
    subprocess.run([str(python), "-c", _MAKE_STUDY, f"sqlite:///{path}"], check=True)
    rng = random.Random(seed)
    con = sqlite3.connect(path)
    con.execute("PRAGMA synchronous=OFF")
    (distribution,) = con.execute("SELECT distribution_json FROM trial_params").fetchone()
    con.execute("DELETE FROM trial_intermediate_values")
    con.execute("DELETE FROM trial_values")
    con.execute("DELETE FROM trial_params")
    con.execute("DELETE FROM trials")
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    start, end = str(now - dt.timedelta(minutes=1)), str(now)
    for first in range(1, trials + 1, 5_000):
        ids = range(first, min(first + 5_000, trials + 1))
        losses = {i: 1.0 + rng.random() for i in ids}
        con.executemany(
            "INSERT INTO trials VALUES (?, ?, 1, 'COMPLETE', ?, ?)",
            [(i, i - 1, start, end) for i in ids],
        )
        con.executemany(
            "INSERT INTO trial_params VALUES (?, ?, 'lr', ?, ?)",
            [(i, i, 10 ** rng.uniform(-5, -1), distribution) for i in ids],
        )
        con.executemany(
            "INSERT INTO trial_values VALUES (?, ?, 0, ?, 'FINITE')",
            [(i, i, losses[i] / points) for i in ids],
        )
        con.executemany(
            "INSERT INTO trial_intermediate_values (trial_id, step, intermediate_value,"
            " intermediate_value_type) VALUES (?, ?, ?, 'FINITE')",
            [(i, n * 10, losses[i] / n) for i in ids for n in range(1, points + 1)],
        )
        con.commit()
    con.close()


@contextlib.contextmanager
def dashboard(study: Path, home: Path) -> Iterator[tuple[str, int]]:
    """``optuna-dashboard`` serving ``study`` on loopback; its base URL and process id."""
    python = python_of(PEERS["optuna-dashboard"])
    port = free_port()
    args = [str(python.parent / "optuna-dashboard"), f"sqlite:///{study}"]
    log = home / "dashboard.log"
    with process([*args, "--host", "127.0.0.1", "--port", str(port)], log) as proc:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        import httpx

        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base}/api/meta", timeout=5).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("optuna-dashboard did not answer within 60 s")
            time.sleep(0.2)
        yield base, proc.pid


# Its trial list (0.21 has no trial table: "Trials (List)", one item per trial) and its
# intermediate-values plot (Plotly: drawn when the plot's SVG has its traces' paths).
TABLE_ROW = "xpath=//*[text()='Trial 0']"
PLOT_LINES = "#graph-intermediate-values .main-svg .scatterlayer .trace path"


def _peak_rss(pid: int) -> int:
    """The peak resident memory of process ``pid`` in bytes (0 where unknown)."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def _available() -> int:
    """Memory available to new work on this machine, in bytes (0 where unknown)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def measure(trials: int, runs: int, memory: dict[int, int]) -> list[tuple[str, list[Any], str]]:
    """(what, seconds per run or None, a note) of the dashboard with a study of ``trials``;
    ``memory`` (the dashboard's peak bytes by study size) gains this size's. A size whose
    memory, grown in proportion from the largest measured, would not fit in what the machine
    has available is not run: the table says why."""
    from playwright.sync_api import sync_playwright

    try:
        python_of(PEERS["optuna-dashboard"])
    except PeerUnavailable as e:
        return [("install", [None], str(e))]
    if memory:
        known = max(memory)
        need = memory[known] * trials / known
        if need > _available():
            why = (
                f"not run: at {known:,} trials its server peaked at {memory[known] / 2**30:.1f} "
                f"GiB; {trials:,} would need about {need / 2**30:.0f} GiB, more than the "
                f"{_available() / 2**30:.0f} GiB available here"
            )
            return [("trial list and plot", [None], why)]
    points = 100
    with tempfile.TemporaryDirectory(prefix="assay-b7-optuna-") as tmp:
        study = Path(tmp) / "study.db"
        begun = time.perf_counter()
        make_study(study, trials, points)
        print(f"optuna study of {trials}: {time.perf_counter() - begun:.0f} s", flush=True)
        rows: list[Any] = []
        plot: list[Any] = []
        with dashboard(study, Path(tmp)) as (base, pid), sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                # No untimed first load: one takes minutes here, and it caches nothing.
                for n in range(runs):
                    table = timed_visit(
                        browser,
                        f"{base}/dashboard/studies/1/trials",
                        [("rows", TABLE_ROW, 1)],
                        LIMIT_S,
                    )
                    drawn = timed_visit(
                        browser,
                        f"{base}/dashboard/studies/1",
                        [("plot", PLOT_LINES, 1)],
                        LIMIT_S,
                    )
                    print(f"optuna-dashboard {trials} run {n}: {table}, {drawn}", flush=True)
                    rows.append(table["rows"])
                    plot.append(drawn["plot"])
                    if table["rows"] is None and drawn["plot"] is None:
                        break  # nothing within the limit: more runs would say the same
            finally:
                browser.close()
            memory[trials] = _peak_rss(pid)
    note = (
        f"{points} intermediate values per trial; limit {LIMIT_S:.0f} s a page; its server "
        f"peaked at {memory[trials] / 2**30:.1f} GiB"
    )
    return [
        ("trial list first rows", rows, note),
        (f"intermediate-values plot (all {trials:,} trials)", plot, note),
    ]
