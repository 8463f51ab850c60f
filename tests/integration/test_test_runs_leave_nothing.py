"""A test run leaves nothing running or made behind: the munged a Slurm test started is stopped
by its pid when the run ends (unless another run still uses it), with its key, log and seed;
the machine's own munge key (``apt install munge`` makes one) is left as it was."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.cluster import ROOT, wait_for
from tests.slurm import _missing
from tests.slurm.munge import KEY, MADE, STATE, _alive, _answers

MACHINE_KEY = Path("/etc/munge/munge.key")

pytestmark = pytest.mark.integration


def _munged_pids() -> list[int]:
    """The munged processes running (a zombie has ended)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if (proc / "comm").read_text().strip() == "munged":
                    found.append(int(proc.name))
            except OSError:
                continue
    return [pid for pid in found if _alive(pid)]


def _other_runs() -> list[int]:
    holders = STATE / "holders"
    held = [int(p.name) for p in holders.glob("*")] if holders.exists() else []
    return [pid for pid in held if _alive(pid)]


def test_a_run_that_started_munged_stops_it_and_keeps_a_key_it_did_not_make() -> None:
    missing = _missing()
    if missing is not None:
        pytest.skip(missing)
    if _answers() and not (STATE / "started.json").exists():
        pytest.skip("this machine runs a munged of its own: no test run starts one")
    key_before = MACHINE_KEY.exists() and MACHINE_KEY.read_bytes()
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         "tests/slurm/run_that_uses_munge.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert (MACHINE_KEY.exists() and MACHINE_KEY.read_bytes()) == key_before
    if _other_runs():
        # Another test run still uses it: stopping it would fail that run's Slurm tests.
        assert _answers()
        return
    wait_for("munged to end", lambda: not _munged_pids(), timeout=10)
    assert not _answers()
    assert [name for name in MADE if (STATE / name).exists()] == []
    assert not KEY.exists()
