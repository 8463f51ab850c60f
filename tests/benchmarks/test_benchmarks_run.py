"""Every benchmark runs in its quick mode (figures come from full runs, never from tests)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.benchmarks._run import run_benchmark
from tests.e2e.conftest import need

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "RESULTS.md"

QUICK = [
    "benchmarks/runtime/bench_b2_b4.py",
    "benchmarks/scheduler/bench_b6.py",
    "benchmarks/searchers/b5_suggest_cost.py",
    "benchmarks/searchers/b9_search_quality.py",
    "benchmarks/searchers/b9_peers.py",
    "benchmarks/cli/bench_b11.py",
    "benchmarks/peers/bench_peers.py",
    "benchmarks/peers/bench_peers.py --b3-only",
    "benchmarks/runtime/bench_b8.py",
    "benchmarks/interactive/bench_b14_notebook.py",
    "benchmarks/api/bench_b7.py",
    "benchmarks/runtime/bench_b10.py",
    "benchmarks/runtime/bench_b12.py",
    "benchmarks/reliability/run_reliability.py",
]


@pytest.mark.parametrize("script", QUICK)
def test_benchmark_runs_in_quick_mode_and_writes_nothing(script: str) -> None:
    before = RESULTS.read_text() if RESULTS.exists() else None
    result = run_benchmark([*script.split(), "--quick"])
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    after = RESULTS.read_text() if RESULTS.exists() else None
    assert before == after, "quick mode must not overwrite the recorded figures"


def test_the_browser_benchmark_runs_in_quick_mode_and_writes_nothing() -> None:
    """B7's Experiment page in headless Chromium: needs the built UI and Chromium (skipped
    without them, failing under CI=true)."""
    sys.path.insert(0, str(ROOT))
    from benchmarks.api.bench_b7_ui import missing

    need(missing())
    test_benchmark_runs_in_quick_mode_and_writes_nothing("benchmarks/api/bench_b7_ui.py")
