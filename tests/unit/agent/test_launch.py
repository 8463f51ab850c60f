"""The launcher a trial runs under: it ends as its command did, lets the agent stop the command
gracefully, and takes the command's whole process group down when the agent dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from assay.agent._launch import trial_command

pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="the parent death signal is Linux's"
)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead and not yet reaped, does not)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] != "Z"


@pytest.mark.parametrize(
    ("script", "code"),
    [
        ("exit 0", 0),
        ("exit 3", 3),
        ("kill -TERM $$", -signal.SIGTERM),
        ("kill -KILL $$", -signal.SIGKILL),
    ],
)
def test_the_launcher_ends_as_its_command_did(script: str, code: int) -> None:
    done = subprocess.run(trial_command(["/bin/sh", "-c", script]), check=False, timeout=30)
    assert done.returncode == code


def test_a_command_that_cannot_run_is_reported_with_code_127() -> None:
    done = subprocess.run(
        trial_command(["/no/such/program"]), check=False, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 127
    assert done.stderr == "cannot run /no/such/program: No such file or directory\n"


def test_a_sigterm_to_the_group_reaches_the_command_which_ends_in_its_own_time() -> None:
    # The trap ends the background sleep too: whether the group's signal reaches it depends on
    # how the shell was started. Its output goes elsewhere all the same: on a loaded machine
    # it outlived the trap's kill once and held the pipe (and the read below) for its 30 s.
    script = (
        "trap 'kill $! 2>/dev/null; sleep 0.3; echo stopped cleanly; exit 0' TERM; "
        "sleep 30 >/dev/null 2>&1 & echo ready; wait"
    )
    proc = subprocess.Popen(
        trial_command(["/bin/sh", "-c", script]),
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ready\n"
    os.killpg(proc.pid, signal.SIGTERM)
    assert proc.wait(timeout=30) == 0, "the launcher waited for the command's own exit"
    assert proc.stdout.read() == "stopped cleanly\n"


def test_the_agents_death_ends_the_command_and_the_processes_it_started_within_a_second() -> None:
    # A stand-in agent: it starts a trial under the launcher, as the agent does, and is then
    # SIGKILLed. The trial starts a helper of its own.
    agent = textwrap.dedent(
        """
        import subprocess, sys, time
        from assay.agent._launch import trial_command
        trial = subprocess.Popen(
            trial_command(["/bin/sh", "-c", "sleep 300 & echo $$ $!; wait"]),
            start_new_session=True,
        )
        print(trial.pid, flush=True)
        time.sleep(300)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", agent], stdout=subprocess.PIPE, text=True, env=os.environ
    )
    assert proc.stdout is not None
    launcher = int(proc.stdout.readline())
    command, helper = (int(pid) for pid in proc.stdout.readline().split())
    pids = [launcher, command, helper]
    assert all(alive(pid) for pid in pids)
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 1.0
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert [pid for pid in pids if alive(pid)] == [], "outlived their agent by a second"


def test_a_launcher_whose_agent_is_already_gone_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    # Started by this process, while it names another as its agent: as if the agent had died
    # (and the launcher been handed to another parent) before it could ask for the signal.
    command = trial_command(["/bin/sh", "-c", f"touch {marker}"], agent_pid=os.getppid())
    done = subprocess.run(command, check=False, timeout=30)
    assert done.returncode == 1
    assert not marker.exists()
