"""The agent's side of the zygote (:mod:`assay.agent._zygote`): which trials it may start, and a
process handle for the children it forks that the runner waits on and signals as it does an
``asyncio`` subprocess."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import re
import signal
import socket
import sys
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

_PYTHON = re.compile(r"^python(3(\.\d+)?)?$")
# Characters that make a command line more than words for the shell to split.
_SHELL = set("\n;&|<>$`*?[]{}~()#\\'\"!")


def direct_python(entrypoint: str | list[str], code_dir: Path) -> list[str] | None:
    """The argv of an entrypoint the zygote may start, ``python[3] SCRIPT [ARG...]`` with no
    ``startup-hook.sh`` to run first; None for anything else (started the ordinary way)."""
    if isinstance(entrypoint, list):
        argv = [str(a) for a in entrypoint]
    else:
        if any(c in _SHELL for c in entrypoint):
            return None
        argv = entrypoint.split()
    if len(argv) < 2 or not _PYTHON.match(argv[0]) or argv[1].startswith("-"):
        return None
    if (code_dir / "startup-hook.sh").exists():
        return None
    return argv


class ForkedProcess:
    """A trial the zygote forked: what the runner uses of ``asyncio.subprocess.Process``."""

    def __init__(
        self, pid: int, stdout: asyncio.StreamReader, stderr: asyncio.StreamReader
    ) -> None:
        self.pid = pid
        self.stdout = stdout
        self.stderr = stderr
        self.returncode: int | None = None
        self._done = asyncio.Event()

    def _exited(self, code: int) -> None:
        if self.returncode is None:
            self.returncode = code
            self._done.set()

    async def wait(self) -> int:
        await self._done.wait()
        assert self.returncode is not None
        return self.returncode


class ZygoteClient:
    """The agent's zygote: started once, restarted if it dies; :meth:`spawn` a trial."""

    def __init__(self, environment: Callable[[], dict[str, str]], line_limit: int) -> None:
        self._environment = environment
        """The zygote's environment: the agent's, shaped as a trial's is (so that its
        interpreter starts as a trial's would)."""
        self._line_limit = line_limit
        self._sock: socket.socket | None = None
        self._proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[int]] = {}
        self._children: dict[int, ForkedProcess] = {}
        self._early: dict[int, int] = {}
        self._starting: asyncio.Lock | None = None

    async def start(self) -> None:
        """Start the zygote (from the event loop's thread, which lives as long as the agent:
        the zygote's parent death signal follows the thread that started it)."""
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self._sock is not None:
                return
            mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                self._proc = await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-m",
                    "assay.agent._zygote",
                    str(os.getpid()),
                    str(theirs.fileno()),
                    stdin=asyncio.subprocess.DEVNULL,
                    pass_fds=[theirs.fileno()],
                    env=self._environment(),
                )
            finally:
                theirs.close()
            mine.setblocking(False)
            self._sock = mine
            self._reader = asyncio.create_task(self._read())

    async def spawn(self, argv: list[str], cwd: Path, env: dict[str, str]) -> ForkedProcess:
        """Fork a trial running ``argv`` in ``cwd`` with ``env``; its output comes through
        pipes, as an ``asyncio`` subprocess's does."""
        await self.start()
        sock = self._sock
        assert sock is not None
        loop = asyncio.get_running_loop()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        null = os.open(os.devnull, os.O_RDONLY)
        request_id = next(self._ids)
        answer: asyncio.Future[int] = loop.create_future()
        self._pending[request_id] = answer
        try:
            body = json.dumps({"id": request_id, "argv": argv, "cwd": str(cwd), "env": env})
            socket.send_fds(sock, [body.encode()], [null, out_w, err_w])
        except OSError:
            self._pending.pop(request_id, None)
            for fd in (out_r, err_r):
                os.close(fd)
            raise
        finally:
            for fd in (null, out_w, err_w):
                os.close(fd)
        stdout = await _reader_of(out_r, self._line_limit)
        stderr = await _reader_of(err_r, self._line_limit)
        pid = await answer
        process = ForkedProcess(pid, stdout, stderr)
        self._children[pid] = process
        if pid in self._early:
            process._exited(self._early.pop(pid))
        return process

    async def _read(self) -> None:
        sock = self._sock
        assert sock is not None
        loop = asyncio.get_running_loop()
        try:
            while True:
                data = await loop.sock_recv(sock, 65536)
                if not data:
                    break
                message = json.loads(data)
                if "id" in message:
                    future = self._pending.pop(message["id"], None)
                    if future is not None and not future.done():
                        future.set_result(int(message["pid"]))
                    continue
                pid, code = int(message["pid"]), os.waitstatus_to_exitcode(message["status"])
                child = self._children.pop(pid, None)
                if child is None:
                    self._early[pid] = code  # reaped before its spawn() resumed
                else:
                    child._exited(code)
        except (OSError, ValueError) as exc:
            log.warning("the trial zygote's socket failed: %s", exc)
        finally:
            self._lost()

    def _lost(self) -> None:
        """The zygote is gone: its children were killed with it (their parent death signal)."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        for future in self._pending.values():
            if not future.done():
                future.set_exception(OSError("the trial zygote ended"))
        self._pending.clear()
        for pid, child in self._children.items():
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
            child._exited(-signal.SIGKILL)
        self._children.clear()

    async def close(self) -> None:
        """End the zygote (it kills whatever children it still has)."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
        if self._proc is not None and self._proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._proc.terminate()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._proc.wait(), 5.0)


async def _reader_of(fd: int, limit: int) -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=limit, loop=loop)
    pipe = os.fdopen(fd, "rb", buffering=0)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), pipe)
    return reader
