"""A test run of its own for ``tests/integration/test_test_runs_leave_nothing.py``: it uses
munged as the Slurm tests do (its name keeps it out of the suite's collection)."""

from __future__ import annotations

import subprocess

from tests.slurm import _require_slurm


def test_munge_answers() -> None:
    _require_slurm()
    assert subprocess.run(["munge", "-n"], capture_output=True, check=False).returncode == 0
