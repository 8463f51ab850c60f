"""Masters for the tests, forked from an interpreter that has imported the master already.

A master's start is mostly its imports (about two CPU seconds of its three), and the suite
starts a few hundred masters. Each test worker keeps one fork server (``multiprocessing``'s
``forkserver``, with ``assay.api.__main__`` preloaded); each master is a fresh process forked
from it that runs ``assay.api.__main__.main`` with its own argv, environment and log, as
``python -m assay.api`` would. It is still a process of its own, on its own port, killed and
restarted as any master is; what ``python -m assay.api`` adds (the interpreter's start and the
imports) is tested by the tests that start masters through ``assay up`` and ``assay master``.

``ASSAY_TEST_MASTER_EXEC=1`` starts every master the ordinary way instead.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
from pathlib import Path

_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["assay.api.__main__"])


def _run_master(argv: list[str], env: dict[str, str], log: str) -> None:
    """In the forked process: the log as its output, its environment, then the master."""
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    for stream in (sys.stdout, sys.stderr):
        stream.reconfigure(line_buffering=True, write_through=True)  # type: ignore[union-attr]
    os.environ.clear()
    os.environ.update(env)
    from assay.api.__main__ import main

    sys.exit(main(argv))


class ForkedMaster:
    """A forked master, with the part of ``subprocess.Popen``'s interface the tests use."""

    def __init__(self, argv: list[str], env: dict[str, str], log: Path) -> None:
        self._process = _CONTEXT.Process(
            target=_run_master, args=(argv, env, str(log)), daemon=True, name="master"
        )
        self._process.start()
        assert self._process.pid is not None
        self.pid: int = self._process.pid

    @property
    def returncode(self) -> int | None:
        return self._process.exitcode

    def poll(self) -> int | None:
        return self._process.exitcode

    def wait(self, timeout: float | None = None) -> int:
        self._process.join(timeout)
        if self._process.exitcode is None:
            raise subprocess.TimeoutExpired("master", timeout or 0.0)
        return self._process.exitcode

    def send_signal(self, sig: int) -> None:
        if self._process.exitcode is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def start_master(argv: list[str], env: dict[str, str], log: Path) -> ForkedMaster | None:
    """A forked master running ``argv`` (the options after ``python -m assay.api``); None when
    ``ASSAY_TEST_MASTER_EXEC=1`` asks for the ordinary start."""
    if env.get("ASSAY_TEST_MASTER_EXEC") == "1":
        return None
    return ForkedMaster(argv, env, log)
