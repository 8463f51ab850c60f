"""munged for the Slurm tests: started when a test run needs it and none runs, stopped by its
pid when that run ends.

Such a munged keeps its key, pid file, log and seed in a directory of the test runs'
(:data:`STATE`, removed with it), never in ``/etc/munge``, ``/var/log/munge`` or
``/var/lib/munge``: only its socket is where Slurm looks for it (``/run/munge``, whose directory is
removed too when a run made it).

munged is one daemon per host (Slurm finds it at ``/run/munge/munge.socket.2``), and several test
runs may share it at once (``make test``'s two workers, or two people's runs on one machine). So
each run that uses it holds it (a file named by the run's pid, which pytest-xdist's workers share
with their controller), and the last run to end stops the munged a test run started (never one
the machine runs of its own) and removes what it made. A run that died without ending leaves
its hold behind: the next one to end sees its pid gone and does not wait for it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

STATE = Path(tempfile.gettempdir()) / "assay-test-munge"
"""What test runs started: ``started.json`` (what a run made), the started munged's key, pid
file, log and seed, and ``holders/PID`` for each run using munged now."""
KEY = STATE / "munge.key"
"""The key of the munged a test run starts (the machine's own, ``/etc/munge/munge.key``, is
never read or written)."""
RUN_DIR = Path("/run/munge")
SOCKET = RUN_DIR / "munge.socket.2"
PID_FILE = STATE / "munged.pid"
MADE = ("started.json", "munge.key", "munged.pid", "munged.log", "munged.seed")
"""What a started munged leaves in :data:`STATE`, removed when it is stopped."""


def _exe(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


def _run_pid() -> int:
    """The pid of this test run: its pytest process, the controller of pytest-xdist's workers."""
    return os.getppid() if os.environ.get("PYTEST_XDIST_WORKER") else os.getpid()


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    STATE.mkdir(mode=0o700, parents=True, exist_ok=True)
    with (STATE / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError):
        # A zombie has ended: only its parent has not read its status.
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return True


def _answers() -> bool:
    if not SOCKET.exists():
        return False
    probe = subprocess.run(["munge", "-n"], capture_output=True, timeout=10, check=False)
    return probe.returncode == 0


def _started() -> dict[str, object]:
    with contextlib.suppress(OSError, ValueError):
        found = json.loads((STATE / "started.json").read_text())
        if isinstance(found, dict):
            return found
    return {}


def hold_munge() -> None:
    """A munged that answers, held by this test run: started (and its key made) if none runs."""
    with _locked():
        holders = STATE / "holders"
        holders.mkdir(exist_ok=True)
        (holders / str(_run_pid())).touch()
        if _answers():
            return
        made_dir = bool(_started().get("run_dir")) or not RUN_DIR.exists()
        RUN_DIR.mkdir(parents=True, exist_ok=True)
        if not KEY.exists():
            create = [_exe("mungekey"), "--create", f"--keyfile={KEY}"]
            subprocess.run(create, check=True, timeout=30)
        # Recorded before it starts: a run killed right after still lets the next one stop it.
        (STATE / "started.json").write_text(json.dumps({"run_dir": made_dir}))
        subprocess.run(
            [
                _exe("munged"),
                "--force",
                f"--key-file={KEY}",
                f"--pid-file={PID_FILE}",
                f"--log-file={STATE / 'munged.log'}",
                f"--seed-file={STATE / 'munged.seed'}",
            ],
            capture_output=True,
            timeout=30,
            check=False,
        )
        for _ in range(50):
            if _answers():
                return
            time.sleep(0.1)
    raise RuntimeError("munged did not start")


def release_munge() -> list[str]:
    """This test run is done with munged: when no other running test run holds it, stop the
    munged a test run started, by its pid, and remove the key and directory a run made. What
    was undone, for the run's summary."""
    undone: list[str] = []
    if not STATE.exists():
        return undone
    with _locked():
        holders = STATE / "holders"
        (holders / str(_run_pid())).unlink(missing_ok=True)
        for held in holders.glob("*") if holders.exists() else []:
            if held.name.isdigit() and _alive(int(held.name)):
                return undone
            held.unlink(missing_ok=True)
        started = _started()
        if not started:
            return undone
        with contextlib.suppress(OSError, ValueError):
            pid = int(PID_FILE.read_text().strip())
            if _is_munged(pid):
                _stop(pid)
                undone.append(f"stopped munged (pid {pid})")
        if started.get("run_dir"):
            with contextlib.suppress(OSError):
                RUN_DIR.rmdir()  # empty once munged has removed its socket
        for name in MADE:
            (STATE / name).unlink(missing_ok=True)
    return undone


def _is_munged(pid: int) -> bool:
    """Whether ``pid`` is still a munged (a pid is reused once its process has gone)."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip() == "munged"
    except OSError:
        return False


def _stop(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    for _ in range(100):
        if not _alive(pid):
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
