"""The ``assay`` process's side of the command server (``assay.cli._server``).

A fresh Python process spends most of a short command importing typer, rich, pydantic and the
client, before it sends one request to the master. So ``assay`` hands its command to a warm
process that has them loaded (the command server): the server forks a child for the command,
and the child takes this process's standard streams, working directory, umask, environment,
ignored signals and arguments, and runs the command as this process would have. This process
waits for the child's status and ends with it; the signals it gets (Ctrl-C, Ctrl-Z, a hang-up,
SIGTERM) are passed to the child's process group. Mercurial's ``chg`` works the same way.

A server runs commands only for callers exactly like the process that started it: one server
per interpreter, import path, interpreter flags, namespaces, cgroup, scheduling priority,
CPU affinity, resource limits and groups (:func:`socket_path`), since a forked child keeps the
server's and cannot take a caller's.

This module is what every ``assay`` pays for, so it imports only small parts of the standard
library: ``_socket`` and ``_signal`` rather than ``socket`` and ``signal`` (whose enums take
longer to import than the rest of this module), ``marshal`` rather than JSON (the server is the
same interpreter, and hears only from its own user), a CRC rather than ``hashlib`` (which loads
OpenSSL).

When no server answers, the command runs in this process and a server is started in the
background for the next one; it ends after :data:`IDLE_SECONDS` without a command, or at once
when the code it loaded has changed on disk. Some commands always run in this process
(:func:`wanted`). ``ASSAY_CLI_SERVER=off`` turns the server off.
"""

from __future__ import annotations

import _socket as socket
import marshal
import os
import resource
import stat
import struct
import sys
import time
import zlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from types import FrameType
else:
    import _signal as signal

SWITCH = "ASSAY_CLI_SERVER"
"""The environment variable that turns the command server off (``off``, ``0``, ``no``,
``false``)."""

IDLE_SECONDS = 900.0
"""A server with no command for this long ends."""

START_BACKOFF_SECONDS = 10.0
"""A server is started at most this often for one socket: one that is still loading, or that
cannot start (its log, beside the socket, says why), is not started again and again."""

FIRST_ANSWER_SECONDS = 10.0
"""How long the server may take to name the command's process; past it, the command runs here."""

RUN_HERE_COMMANDS = frozenset({"up", "down", "master", "agent", "user"})
"""The root's subcommands that always run in the ``assay`` process: ``up``, ``down``,
``master`` and ``agent`` start, exec or stop a cluster's own long-lived processes, which should
be this process's children; ``user`` asks for passwords at a hidden prompt, which needs this
process's controlling terminal."""

RUN_HERE_OPTIONS = frozenset({"--local", "--install-completion", "--show-completion"})
"""Options that keep a command in the ``assay`` process: ``--local`` runs a throw-away cluster
as its children; the completion installers look at the parent process to tell the shell."""

RUN_HERE_PATHS = ("/dev/fd/", "/proc/self/fd/", "/dev/stdin")
"""An argument naming one of this process's descriptors (``<(...)`` in a shell) keeps the
command here: only the standard streams and the directory are handed over."""

FORWARDED = (
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
    signal.SIGWINCH,
    signal.SIGTSTP,
)
"""The signals this process passes on to the command's process group, unless it ignores them."""

GO = b"go\n"
"""The caller's answer to the child's pid: it waits for this child and runs nothing itself."""

HEADER = struct.Struct("!I")
"""A request: its length, then its body (:func:`request`); the four descriptors (stdin, stdout,
stderr, the working directory) ride with its first bytes."""

BOOT = (
    "import json, sys; sys.path[:] = json.loads(sys.argv[2]); "
    "from assay.cli._server import serve; serve(sys.argv[1])"
)
"""What a server process runs: it imports from exactly the paths the ``assay`` that started it
imports from."""


def wanted(argv: list[str]) -> bool:
    """Whether ``argv`` may run in the command server: on Linux only (it reads ``/proc``, and
    takes peer credentials and hang-ups as Linux gives them), never when switched off."""
    if not sys.platform.startswith("linux"):
        return False
    if os.environ.get(SWITCH, "").strip().lower() in ("off", "0", "no", "false"):
        return False
    if _root_subcommand(argv) in RUN_HERE_COMMANDS:
        return False
    for arg in argv:
        if arg.split("=", 1)[0] in RUN_HERE_OPTIONS:
            return False
        if any(path in arg for path in RUN_HERE_PATHS):
            return False
    return True


def _root_subcommand(argv: list[str]) -> str | None:
    args = iter(argv)
    for arg in args:
        if arg in ("-m", "--master"):
            next(args, None)
        elif not arg.startswith("-"):
            return arg
    return None


def import_path() -> list[str]:
    """``sys.path`` as the server is to have it. Less the current directory, which
    ``python -c`` puts first: a server serves its user in every directory."""
    return [entry for entry in sys.path if entry and os.path.isabs(entry)]


def _private_dir(path: str, uid: int) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == uid and not info.st_mode & 0o077


def runtime_dir() -> str | None:
    """This user's directory for servers' sockets, made if missing: ``$XDG_RUNTIME_DIR/assay``
    when that variable names a directory of this user's that no one else may enter (as the XDG
    specification has it; under ``sudo`` it may be another user's), else
    ``$TMPDIR/assay-UID`` (``/tmp`` when ``TMPDIR`` is unset or relative). ``None`` when that
    is not a directory of this user's that no one else may enter."""
    uid = os.getuid()
    base = os.environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(base) and _private_dir(base, uid):
        path = os.path.join(base, "assay")
    else:
        tmp = os.environ.get("TMPDIR", "")
        path = os.path.join(tmp if os.path.isabs(tmp) else "/tmp", f"assay-{uid}")
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    return path if _private_dir(path, uid) else None


def _context() -> tuple[object, ...]:
    """What a forked child keeps of the server and could not take from a caller."""
    namespaces = []
    for kind in ("mnt", "net", "pid", "ipc", "uts", "user", "cgroup"):
        try:
            namespaces.append(os.readlink(f"/proc/self/ns/{kind}"))
        except OSError:
            namespaces.append("")
    try:
        with open("/proc/self/cgroup", "rb") as cgroup:
            group = cgroup.read()
    except OSError:
        group = b""
    limits = []
    for name in dir(resource):
        if name.startswith("RLIMIT_"):
            limits.append(resource.getrlimit(getattr(resource, name)))
    return (
        namespaces,
        group,
        os.getpriority(os.PRIO_PROCESS, 0),
        sorted(os.sched_getaffinity(0)),
        limits,
        sorted(os.getgroups()),
        os.getgid(),
    )


def socket_path(directory: str) -> str:
    """The socket of the server for this process: one per interpreter, import path,
    interpreter flags and the few variables read when the interpreter or a library the server
    loads starts, and per process context (:func:`_context`)."""
    material = repr(
        (
            sys.executable,
            import_path(),
            tuple(sys.flags),
            sys.warnoptions,
            sys._xoptions,
            sys.getfilesystemencoding(),
            [
                os.environ.get(name)
                for name in (
                    "TYPER_USE_RICH",
                    "PYDANTIC_DISABLE_PLUGINS",
                    "PYTHONHASHSEED",
                    "LD_LIBRARY_PATH",
                    "LD_PRELOAD",
                )
            ],
            _context(),
        )
    )
    data = material.encode()
    key = f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"
    return os.path.join(directory, f"cli-{key}.sock")


def run_served(argv: list[str]) -> int | None:
    """Runs ``argv`` in the command server and returns its exit status; ``None`` when it did
    not run there (no server, a server whose code is stale, a command that runs here), and the
    caller runs it itself."""
    if not wanted(argv):
        return None
    try:
        directory = runtime_dir()
        if directory is None:
            return None
        path = socket_path(directory)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except Exception:  # Whatever goes wrong before a child runs, the command runs here.
        return None
    try:
        sock.connect(path)
    except (FileNotFoundError, ConnectionRefusedError):
        sock.close()
        try:  # noqa: SIM105 - contextlib is one more import for every command
            start_server(path)
        except Exception:
            pass
        return None
    except OSError:
        sock.close()
        return None
    try:
        child = _handed_over(sock, argv)
        if child is None:
            return None
        return _wait_for(*child)
    finally:
        sock.close()


def start_server(path: str) -> None:
    """Starts a server for ``path`` in its own session, detached from this terminal, with this
    process's interpreter flags, no blocked signal and every signal's default action; its
    output goes to ``path`` + ``.log``. At most once in :data:`START_BACKOFF_SECONDS`: any
    other server started in a race finds the socket's lock taken and ends (``serve``)."""
    marker = f"{path}.started"
    try:
        if time.time() - os.stat(marker).st_mtime < START_BACKOFF_SECONDS:
            return
    except OSError:
        pass
    import json
    import subprocess

    try:
        os.close(os.open(marker, os.O_WRONLY | os.O_CREAT, 0o600))
        os.utime(marker)
        log = os.open(f"{path}.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    except OSError:
        return
    devnull = os.open(os.devnull, os.O_RDONLY)
    flags = subprocess._args_from_interpreter_flags()  # type: ignore[attr-defined]
    try:
        os.posix_spawn(
            sys.executable,
            [sys.executable, *flags, "-c", BOOT, path, json.dumps(import_path())],
            dict(os.environ),
            file_actions=[
                (os.POSIX_SPAWN_DUP2, devnull, 0),
                (os.POSIX_SPAWN_DUP2, log, 1),
                (os.POSIX_SPAWN_DUP2, log, 2),
            ],
            setsid=True,
            setsigmask=(),
            setsigdef=signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP},
        )
    except OSError:
        pass
    finally:
        os.close(devnull)
        os.close(log)


def _ignored() -> list[int]:
    ignored = []
    for signum in signal.valid_signals():
        try:
            if signal.getsignal(signum) == signal.SIG_IGN:
                ignored.append(int(signum))
        except (OSError, ValueError):
            continue
    return ignored


def request(argv: list[str]) -> bytes | None:
    """What the child needs to be this process (``marshal``'s bytes); ``None`` when a standard
    stream is closed (a child could not take it over)."""
    streams = (sys.stdin, sys.stdout, sys.stderr)
    if any(stream is None for stream in streams):
        return None
    umask = os.umask(0)
    os.umask(umask)
    body = {
        "argv0": sys.argv[0],
        "argv": argv,
        "env": dict(os.environ),
        "umask": umask,
        "streams": [
            [
                stream.encoding,
                stream.errors,
                bool(getattr(stream, "line_buffering", False)),
                bool(getattr(stream, "write_through", False)),
            ]
            for stream in streams
        ],
        "ignored": _ignored(),
        "blocked": [int(signum) for signum in signal.pthread_sigmask(signal.SIG_BLOCK, ())],
    }
    return marshal.dumps(body)


def _handed_over(sock: socket.socket, argv: list[str]) -> tuple[int, _Lines] | None:
    """The child that runs the command, once told to go (its pid, and the server's answers
    to come); ``None`` when nothing runs, nor will."""
    try:
        return _hand_over(sock, argv)
    except Exception:  # Before the go, nothing runs: the command runs here.
        return None


def _hand_over(sock: socket.socket, argv: list[str]) -> tuple[int, _Lines] | None:
    body = request(argv)
    if body is None:
        return None
    try:
        for fd in (0, 1, 2):
            os.fstat(fd)
        # O_PATH: a directory this process may enter but not read is handed over too.
        cwd = os.open(".", os.O_PATH | os.O_DIRECTORY)
    except OSError:
        return None
    message = HEADER.pack(len(body)) + body
    rights = struct.pack("4i", 0, 1, 2, cwd)
    try:
        sent = sock.sendmsg([message], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, rights)])
        sock.sendall(message[sent:])
    except OSError:
        return None
    finally:
        os.close(cwd)
    replies = _Lines(sock)
    sock.settimeout(FIRST_ANSWER_SECONDS)
    first = replies.readline()
    # The child names itself and runs nothing until told to go: any other first answer, or
    # none in time, means nothing ran, and nothing will (this end closes unanswered).
    if not first.startswith(b"pid "):
        return None
    child = int(first.split()[1])
    sock.settimeout(None)
    try:
        sock.sendall(GO)
    except OSError:
        return None
    # Nothing after the go may fail: the caller must never run a command its child runs.
    return child, replies


class _Lines:
    """The server's answers, a line at a time (``_socket`` has no ``makefile``)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def readline(self) -> bytes:
        while b"\n" not in self.buffer:
            try:
                more = self.sock.recv(4096)
            except OSError:
                more = b""
            if not more:
                line, self.buffer = self.buffer, b""
                return line
            self.buffer += more
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line + b"\n"


def _wait_for(child: int, replies: _Lines) -> int:
    def forward(signum: int, _frame: FrameType | None) -> None:
        try:
            os.killpg(child, signum)
        except OSError:
            return
        if signum == signal.SIGTSTP:
            # Stop here too, as a shell expects of its job, and wake the command when this
            # process is continued.
            signal.signal(signal.SIGTSTP, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTSTP)
            signal.signal(signal.SIGTSTP, forward)
            try:  # noqa: SIM105 - contextlib is one more import for every command
                os.killpg(child, signal.SIGCONT)
            except OSError:
                pass

    previous = {}
    for signum in FORWARDED:
        handler = signal.getsignal(signum)
        if handler != signal.SIG_IGN:
            previous[signum] = signal.signal(signum, forward)
    try:
        status = replies.readline()
        word, _, number = status.decode(errors="replace").strip().partition(" ")
        if word not in ("exit", "signal"):
            # The server is gone: the command goes on, reparented, until it ends.
            while _running(child):
                time.sleep(0.05)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if word == "exit":
        return int(number)
    if word == "signal":
        # Die of the same signal, so that a shell sees what it would have seen.
        ended_by = int(number)
        sys.stdout.flush()
        signal.signal(ended_by, signal.SIG_DFL)
        os.kill(os.getpid(), ended_by)
        return 128 + ended_by
    sys.stderr.write("assay: the command server ended before the command; its status is lost\n")
    return 1


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


__all__ = ["SWITCH", "run_served", "socket_path", "start_server", "wanted"]
