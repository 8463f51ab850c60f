"""Running a node's processes together: their output tagged with their rank, a failure of one
stopping the others, the node ending as its first failing process did."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import IO

_PR_SET_PDEATHSIG = 1
STOP_GRACE = 10.0
"""Seconds the other processes get to end after one failed, before they are killed."""


def _pump(stream: IO[bytes], out: IO[bytes], prefix: bytes, lock: threading.Lock) -> None:
    for line in iter(stream.readline, b""):
        with lock:
            out.write(prefix + line if line.endswith(b"\n") else prefix + line + b"\n")
            out.flush()
    stream.close()


def run_tagged(
    launcher: str, commands: Sequence[tuple[int, list[str], dict[str, str]]], tag: bool = True
) -> int:
    """Run each ``(rank, argv, env)`` at once and wait for all; the exit code to end with.

    With ``tag`` each output line is prefixed ``[rank=N] `` (as the agent reads it back). A
    SIGTERM or SIGINT to this process is passed on to them; those alive :data:`STOP_GRACE`
    seconds later are killed. Once one fails the others get SIGTERM, then SIGKILL after
    :data:`STOP_GRACE` seconds.
    """
    procs: list[tuple[int, subprocess.Popen[bytes]]] = []

    def on_signal(sig: int, _frame: object) -> None:
        # Passed on: a launcher such as torchrun signals only its own child's group, and this
        # process may have been signalled alone (its parent died).
        for _, proc in procs:
            _signal(proc, sig)
        _stop([p for _, p in procs], first=None)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    lock = threading.Lock()
    pumps: list[threading.Thread] = []
    for rank, argv, env in commands:
        try:
            proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as exc:
            sys.stderr.write(f"{launcher}: cannot run {argv[0]}: {exc.strerror}\n")
            _stop([p for _, p in procs])
            return 127
        procs.append((rank, proc))
        prefix = f"[rank={rank}] ".encode() if tag else b""
        for stream, out in ((proc.stdout, sys.stdout.buffer), (proc.stderr, sys.stderr.buffer)):
            assert stream is not None
            pump = threading.Thread(target=_pump, args=(stream, out, prefix, lock), daemon=True)
            pump.start()
            pumps.append(pump)
    failed = _wait(procs)
    for pump in pumps:
        pump.join(timeout=5)
    if failed is None:
        return 0
    rank, code = failed
    if len(procs) > 1:
        what = f"exit code {code}" if code >= 0 else f"signal {-code}"
        sys.stderr.write(
            f"{launcher}: rank {rank} failed first ({what}); the other ranks were stopped\n"
        )
    if code < 0:
        return _end_by_signal(-code)
    return code


def _wait(procs: list[tuple[int, subprocess.Popen[bytes]]]) -> tuple[int, int] | None:
    """Wait for every process, stopping the rest once one fails; the first failure."""
    failed: tuple[int, int] | None = None
    live = dict(procs)
    while live:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        for rank, proc in list(live.items()):
            if proc.pid != pid:
                continue
            code = os.waitstatus_to_exitcode(status)
            proc.returncode = code
            del live[rank]
            if code != 0 and failed is None:
                failed = (rank, code)
                _stop(list(live.values()))
    return failed


def _stop(procs: list[subprocess.Popen[bytes]], first: int | None = signal.SIGTERM) -> None:
    """Send ``first`` (if any) to the processes, and SIGKILL to those alive after
    :data:`STOP_GRACE` seconds."""

    def stop() -> None:
        if first is not None:
            for proc in procs:
                _signal(proc, first)
        threading.Event().wait(STOP_GRACE)
        for proc in procs:
            _signal(proc, signal.SIGKILL)

    threading.Thread(target=stop, daemon=True).start()


def _signal(proc: subprocess.Popen[bytes], sig: int) -> None:
    # os.kill, not Popen.send_signal: its poll() could reap a process the wait loop is owed.
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, sig)


def _end_by_signal(sig: int) -> int:
    """End this process by ``sig`` (as its failing process ended), or 128 + sig."""
    sys.stdout.flush()
    sys.stderr.flush()
    signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)
    return 128 + sig


def end_with_parent() -> None:
    """Ask Linux for a SIGTERM to this process when its parent dies (a no-op elsewhere): a
    launcher that starts its workers in sessions of their own (torchrun does) may be killed
    without passing the signal on."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass
