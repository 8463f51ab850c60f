"""The B6 benchmark script runs (its quick mode: a small pool, nothing written)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_b6_benchmark_runs_in_quick_mode_and_prints_every_scenario() -> None:
    script = ROOT / "benchmarks" / "scheduler" / "bench_b6.py"
    done = subprocess.run(
        [sys.executable, str(script), "--quick"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ")]
    assert [row.split("|")[1:3] for row in rows] == [
        [" steady ", " priority "],
        [" steady ", " fair share "],
        [" storm ", " priority "],
        [" storm ", " fair share "],
    ]
