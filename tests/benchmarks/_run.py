"""Running a benchmark script for a test: in a process group of its own, which is ended whole
when the test ends, so a benchmark stopped by a timeout leaves no master or agent behind (it
cannot end them itself when it is killed)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_benchmark(args: list[str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` in the repository's root, its output kept; every process it started is
    killed once it returns, fails or is interrupted."""
    proc = subprocess.Popen(
        [sys.executable, *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True,
    )  # fmt: skip
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
