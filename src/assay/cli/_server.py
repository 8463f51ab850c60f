"""The command server: a warm process that runs ``assay`` commands in forked children.

Started by ``assay`` (``assay.cli._served``) as ``python -c BOOT SOCKET PATHS``. It imports what
commands spend their start on (typer, rich, pydantic, the client and its models, built), then
listens on a Unix socket only its user can reach. Each connection is a command: the server
forks, and the child takes the caller's streams, directory, umask, environment, signals and
arguments and runs the command as the caller would have (:func:`run_child`); the server tells
the caller how the child ended, as an exit status or a signal.

What the server loads ahead must not depend on the environment or the terminal of the process
that loads it, since every command brings its own: so no ``assay.cli`` module with a console or
a terminal check in it (their import is part of each command, and short).

It ends ``IDLE_SECONDS`` after its last command ended, and at the first command after any module
it loaded (or the interpreter) has changed on disk (the caller then runs that command itself;
the next starts a fresh server). One server per socket: a second one started in a race finds
the lock taken and ends.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import importlib
import io
import locale
import marshal
import os
import resource
import select
import signal
import socket
import struct
import sys
import time
import traceback
from dataclasses import dataclass

from assay.cli._served import FIRST_ANSWER_SECONDS, GO, HEADER, IDLE_SECONDS

WARM = (
    "click",
    "typer",
    "typer.core",
    "typer.main",
    "rich.console",
    "rich.table",
    "rich.text",
    "rich.progress",
    "rich.markup",
    "pydantic",
    "http.client",
    "yaml",
    "assay.errors",
    "assay.client",
    "assay.rest",
    "assay.config",
    "assay.cli._lazy",
    "assay.cli._state",
)
"""Modules every command, or a common one, imports; none reads the environment or a terminal
when it is imported."""

SETUP_FAILED = 121
"""The exit status of a child that could not take the caller's place; the caller, not told the
child's pid, runs the command itself."""

_PEERCRED = struct.Struct("3i")


def warm() -> None:
    """Imports :data:`WARM` and builds every REST model's validator, so that no command pays
    for them (nor for pydantic's one-time scan of installed packages for plugins)."""
    for name in WARM:
        importlib.import_module(name)
    import pydantic

    from assay import rest
    from assay.client import Client  # noqa: F401 - loaded on first use

    for name in rest.__all__:
        model = getattr(rest, name)
        if isinstance(model, type) and issubclass(model, pydantic.BaseModel):
            with contextlib.suppress(Exception):
                model.model_rebuild()
                model.__pydantic_validator__  # noqa: B018 - built when first read


Stamp = tuple[int, int, int]


def _stamp(path: str) -> Stamp:
    info = os.stat(path)
    return info.st_mtime_ns, info.st_size, info.st_ino


def fingerprint() -> dict[str, Stamp]:
    """The interpreter's and every loaded module's file: modification time, size, inode."""
    stamps: dict[str, Stamp] = {}
    paths = [sys.executable, *(getattr(m, "__file__", None) for m in list(sys.modules.values()))]
    for path in paths:
        if isinstance(path, str):
            with contextlib.suppress(OSError):
                stamps[path] = _stamp(path)
    return stamps


def changed(stamps: dict[str, Stamp]) -> bool:
    """Whether any file of :func:`fingerprint` changed since (an upgrade, an edit)."""
    for path, stamp in stamps.items():
        try:
            if _stamp(path) != stamp:
                return True
        except OSError:
            return True
    return False


def serve(path: str) -> None:
    """Serves commands on the socket ``path`` until idle, stale or told to stop (SIGTERM), then
    ends the process; returns at once when another server holds the socket. In a child it runs
    the command and ends the process with the command's status."""
    # Nothing of the process that started this one is kept: not its directory (which could
    # then not be unmounted), nor any descriptor it left open (a pipe someone waits on).
    os.chdir("/")
    os.closerange(3, resource.getrlimit(resource.RLIMIT_NOFILE)[1])
    lock = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # Another server holds the socket.
    warm()
    times = fingerprint()
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # Left by a server that was killed.
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    mask = os.umask(0o177)
    try:
        listener.bind(path)
    finally:
        os.umask(mask)
    listener.listen(64)
    os.ftruncate(lock, 0)
    os.write(lock, f"{os.getpid()}\n".encode())
    forked = _Server(path, lock, listener, times).loop()
    if forked is None:
        # Nothing to flush or clean up: skip tearing down every module loaded (seconds, on a
        # busy machine).
        os._exit(0)
    conn, request = forked
    status = _finish(run_child(conn, request))
    # Told by the child itself, so that the caller learns it even if the server has died.
    with contextlib.suppress(OSError):
        conn.sendall(f"exit {status}\n".encode())
    os._exit(status)


class _Server:
    def __init__(
        self, path: str, lock: int, listener: socket.socket, times: dict[str, Stamp]
    ) -> None:
        self.path = path
        self.bound = os.stat(path).st_ino
        self.lock: int | None = lock
        self.listener: socket.socket | None = listener
        self.times = times
        self.children: dict[int, socket.socket] = {}
        self.gone: set[int] = set()
        self.last = time.monotonic()
        self.wake_read, self.wake_write = os.pipe()
        os.set_blocking(self.wake_write, False)
        os.set_blocking(self.wake_read, False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        # SIGTERM: retire (the socket is removed, the commands running finish), then end.
        self.stopping = False
        signal.signal(signal.SIGTERM, lambda *_: setattr(self, "stopping", True))
        signal.set_wakeup_fd(self.wake_write)

    def loop(self) -> tuple[socket.socket, _Request] | None:
        """Accepts commands until idle or stale; returns the connection in a forked child,
        ``None`` in the server once it has retired and its last child has ended."""
        while self.listener is not None or self.children:
            timeout = None
            if self.listener is not None and not self.children:
                # Idle since the last command ended (or the last one was refused).
                timeout = IDLE_SECONDS - (time.monotonic() - self.last)
                if timeout <= 0:
                    self.retire()
                    continue
            poller = select.poll()
            poller.register(self.wake_read, select.POLLIN)
            if self.listener is not None:
                poller.register(self.listener, select.POLLIN)
            # A caller's end closing, not what it sends: its "go" is for the child to read.
            watched = {
                conn.fileno(): pid for pid, conn in self.children.items() if pid not in self.gone
            }
            for fd in watched:
                poller.register(fd, select.POLLRDHUP)
            events = dict(poller.poll(None if timeout is None else timeout * 1000))
            if self.wake_read in events:
                with contextlib.suppress(BlockingIOError):
                    os.read(self.wake_read, 4096)
                self.reap()
            if self.stopping and self.listener is not None:
                self.retire()
                continue
            for fd, pid in watched.items():
                if fd in events and pid in self.children:
                    self.caller_gone(pid)
            if self.listener is not None and self.listener.fileno() in events:
                conn, _ = self.listener.accept()
                self.last = time.monotonic()
                request = self.admit(conn)
                if request is None:
                    continue
                pid = os.fork()
                if pid == 0:
                    self.leave()
                    return conn, request
                # Both sides set the group, so that it is the child's before either goes on.
                with contextlib.suppress(OSError):
                    os.setpgid(pid, pid)
                request.close_descriptors()
                self.children[pid] = conn
        return None

    def caller_gone(self, pid: int) -> None:
        """A caller's end of the socket closed before its command ended: it died without
        passing a signal on (SIGKILL), and the command's process dies with it, as it would
        have in the caller. What that process started lives on, as it would have. (A caller
        closing after the child told it its status races the child's own exit, to the same
        end.)"""
        self.gone.add(pid)
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)

    def admit(self, conn: socket.socket) -> _Request | None:
        """The caller's request, if it is to be run: only its own user's, and only while no
        module has changed on disk (a caller refused runs the command itself)."""
        uid = _PEERCRED.unpack(conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[1]
        if uid != os.getuid():
            conn.close()
            return None
        if changed(self.times):
            with contextlib.suppress(OSError):
                conn.sendall(b"stale\n")
            conn.close()
            self.retire()
            return None
        try:
            return _receive(conn)
        except Exception:  # Whatever it sent, the caller runs the command itself.
            conn.close()
            return None

    def retire(self) -> None:
        """Takes no more commands, and lets a fresh server take the socket at once; the
        commands running finish, and their callers are told how."""
        assert self.listener is not None and self.lock is not None
        # Only the socket this server bound: a fresh server may already have bound its own.
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == self.bound:
                os.unlink(self.path)
        self.listener.close()
        self.listener = None
        os.close(self.lock)
        self.lock = None

    def reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.children.pop(pid, None)
            self.gone.discard(pid)
            self.last = time.monotonic()
            if conn is None:
                continue
            if os.WIFSIGNALED(status):
                answer = f"signal {os.WTERMSIG(status)}\n"
            else:
                answer = f"exit {os.waitstatus_to_exitcode(status)}\n"
            with contextlib.suppress(OSError):
                conn.sendall(answer.encode())
            conn.close()

    def leave(self) -> None:
        """In a new child: drop what is the server's."""
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        if self.listener is not None:
            self.listener.close()
        if self.lock is not None:
            os.close(self.lock)
        os.close(self.wake_read)
        os.close(self.wake_write)
        for other in self.children.values():
            other.close()
        self.children.clear()


def run_child(conn: socket.socket, request: _Request) -> int:
    """Takes the caller's place and runs its command; the status to end with."""
    log = os.dup(2)
    try:
        os.setpgid(0, 0)
        request.take_place()
        conn.sendall(f"pid {os.getpid()}\n".encode())
        # The caller's word that it is still waiting for this child and will not run the
        # command itself: without it, nothing runs (a caller that gave up has closed).
        if _read_line(conn, FIRST_ANSWER_SECONDS) != GO:
            return SETUP_FAILED
    except Exception:
        # Into the server's log: the caller, not told a pid, runs the command itself.
        os.write(log, traceback.format_exc().encode())
        return SETUP_FAILED
    finally:
        os.close(log)
    from assay.cli import run_here

    try:
        run_here()
    except SystemExit as done:
        return _status(done.code)
    except KeyboardInterrupt:
        # The interpreter dies of SIGINT after an uncaught Ctrl-C; so does this child.
        _finish(0)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:
        sys.excepthook(*sys.exc_info())  # type: ignore[arg-type]
        return 1
    return 0


def _finish(status: int) -> int:
    """Ends the command as the interpreter ends a program, less tearing down the modules the
    server loaded (tens of milliseconds the caller would wait for): threads joined, exit hooks
    run, standard streams flushed; a stream that cannot be flushed is reported, and the status
    is then 120."""
    threading = sys.modules.get("threading")
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        shutdown()
    atexit._run_exitfuncs()
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        try:
            stream.flush()
        except Exception as exc:
            status = 120
            with contextlib.suppress(Exception):
                os.write(2, f"Exception ignored on flushing sys.{name}:\n{exc!r}\n".encode())
    return status


def _status(code: object) -> int:
    """What the interpreter makes of ``sys.exit(code)``."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _read_line(conn: socket.socket, seconds: float) -> bytes:
    conn.settimeout(seconds)
    line = b""
    while not line.endswith(b"\n"):
        more = conn.recv(1)
        if not more:
            break
        line += more
    conn.settimeout(None)
    return line


@dataclass
class _Request:
    """What a caller sent: its arguments, environment, umask and standard streams' encodings,
    and the descriptors of its standard streams and working directory."""

    argv0: str
    argv: list[str]
    env: dict[str, str]
    umask: int
    streams: list[tuple[str, str, bool, bool]]
    ignored: list[int]
    blocked: list[int]
    fds: list[int]

    def close_descriptors(self) -> None:
        for fd in self.fds:
            with contextlib.suppress(OSError):
                os.close(fd)

    def take_place(self) -> None:
        """Becomes the caller: its descriptors, directory, umask, environment (its time zone
        and locale too), arguments, standard streams (encodings and buffering) and signals
        (those it ignores stay ignored, those it blocks blocked; the rest as the interpreter
        starts them)."""
        for target, fd in zip((0, 1, 2), self.fds[:3], strict=True):
            os.dup2(fd, target)
        os.fchdir(self.fds[3])
        self.close_descriptors()
        os.umask(self.umask)
        os.environ.clear()
        os.environ.update(self.env)
        time.tzset()
        with contextlib.suppress(locale.Error):
            locale.setlocale(locale.LC_CTYPE, "")
        sys.argv = [self.argv0, *self.argv]
        made = []
        for fd, (encoding, errors, lines, through) in enumerate(self.streams):
            # As the interpreter builds them: unbuffered bytes under `-u`/PYTHONUNBUFFERED
            # (a failed write fails at once), buffered otherwise; stdin always buffered.
            raw = io.FileIO(fd, "r" if fd == 0 else "w", closefd=False)
            buffer: io.RawIOBase | io.BufferedIOBase
            if fd == 0:
                buffer = io.BufferedReader(raw)
            else:
                buffer = raw if through else io.BufferedWriter(raw)
            made.append(
                io.TextIOWrapper(
                    buffer,  # type: ignore[arg-type]
                    encoding=encoding,
                    errors=errors,
                    newline="\n",
                    line_buffering=lines,
                    write_through=through,
                )
            )
        # The originals too: what sizes the terminal (shutil) asks ``sys.__stdout__``.
        sys.stdin, sys.stdout, sys.stderr = made
        for name, stream in zip(("__stdin__", "__stdout__", "__stderr__"), made, strict=True):
            setattr(sys, name, stream)
        for signum in (
            signal.SIGTERM,
            signal.SIGHUP,
            signal.SIGQUIT,
            signal.SIGUSR1,
            signal.SIGUSR2,
        ):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for ignored in self.ignored:
            with contextlib.suppress(OSError, ValueError):
                signal.signal(ignored, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_SETMASK, self.blocked)


def _receive(conn: socket.socket) -> _Request:
    """Reads a request (``assay.cli._served.request``); the caller sends it as it connects."""
    conn.settimeout(2)
    data, fds, _, _ = socket.recv_fds(conn, 1 << 16, 4)
    if len(fds) != 4:
        for fd in fds:
            os.close(fd)
        raise ValueError("a request without its four descriptors")
    try:
        (length,) = HEADER.unpack_from(data)
        while len(data) < HEADER.size + length:
            more = conn.recv(1 << 16)
            if not more:
                raise EOFError("a request cut short")
            data += more
        body = marshal.loads(data[HEADER.size : HEADER.size + length])
        request = _Request(
            argv0=str(body["argv0"]),
            argv=[str(arg) for arg in body["argv"]],
            env={str(key): str(value) for key, value in body["env"].items()},
            umask=int(body["umask"]),
            streams=[
                (str(encoding), str(errors), bool(lines), bool(through))
                for encoding, errors, lines, through in body["streams"]
            ],
            ignored=[int(signum) for signum in body["ignored"]],
            blocked=[int(signum) for signum in body["blocked"]],
            fds=fds,
        )
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    conn.settimeout(None)
    return request


__all__ = ["serve"]
