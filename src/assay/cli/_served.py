"""The ``assay`` process's side of the command server (``assay.cli._server``).

A fresh Python process spends most of a short command importing typer, rich, pydantic and the
client, before it sends one request to the master. So ``assay`` hands its command to a warm
process that has them loaded (the command server, one per user and Python environment): the
server forks a child for the command, and the child takes this process's standard streams,
working directory, umask, environment and arguments, and runs the command exactly as this
process would have. This process waits for the child's status and ends with it; the signals it
gets (Ctrl-C, Ctrl-Z, a hang-up, SIGTERM) are passed to the child's process group. Mercurial's
``chg`` works the same way.

This module is what every ``assay`` pays for, so it imports only the standard library's C
modules: ``_socket`` and ``_signal`` rather than ``socket`` and ``signal`` (whose enums take
longer to import than the rest of this module), ``marshal`` rather than JSON (the server is the
same interpreter, and hears only from its own user), a CRC rather than ``hashlib`` (which loads
OpenSSL).

When no server answers, the command runs in this process and a server is started in the
background for the next one; it ends after :data:`IDLE_SECONDS` without a command, or at once
when the code it loaded has changed on disk. Commands that run a cluster's processes (``up``,
``down``, ``master``, ``agent``, ``e create --local``) and the shell-completion installers always
run in this process. ``ASSAY_CLI_SERVER=off`` turns the server off.
"""

from __future__ import annotations

import _socket as socket
import marshal
import os
import stat
import struct
import sys
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

RUN_HERE_COMMANDS = frozenset({"up", "down", "master", "agent"})
"""The root's subcommands that always run in the ``assay`` process: they start, exec or stop a
cluster's own long-lived processes, which should be this process's children, not the server's."""

RUN_HERE_OPTIONS = frozenset({"--local", "--install-completion", "--show-completion"})
"""Options that keep a command in the ``assay`` process: ``--local`` runs a throw-away cluster
as its children; the completion installers look at the parent process to tell the shell."""

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
"""The signals this process passes on to the command's process group."""

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
    """Whether ``argv`` may run in the command server."""
    if os.environ.get(SWITCH, "").strip().lower() in ("off", "0", "no", "false"):
        return False
    if _root_subcommand(argv) in RUN_HERE_COMMANDS:
        return False
    return not any(arg.split("=", 1)[0] in RUN_HERE_OPTIONS for arg in argv)


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


def runtime_dir() -> str | None:
    """This user's directory for servers' sockets (``$XDG_RUNTIME_DIR/assay``, else
    ``/tmp/assay-UID``), made if missing; ``None`` when it is not a directory of this user's
    that no one else may enter."""
    base = os.environ.get("XDG_RUNTIME_DIR", "")
    uid = os.getuid()
    if base and os.path.isdir(base):
        path = os.path.join(base, "assay")
    else:
        path = os.path.join(os.environ.get("TMPDIR") or "/tmp", f"assay-{uid}")
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid or info.st_mode & 0o077:
        return None
    return path


def socket_path(directory: str) -> str:
    """The socket of the server for this Python environment: one per interpreter, import path
    and interpreter flags, since a server can only run what it could import."""
    material = repr(
        (
            sys.executable,
            import_path(),
            tuple(sys.flags),
            sys.warnoptions,
            sys._xoptions,
            os.environ.get("TYPER_USE_RICH"),
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
    directory = runtime_dir()
    if directory is None:
        return None
    path = socket_path(directory)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except (FileNotFoundError, ConnectionRefusedError):
        sock.close()
        start_server(path)
        return None
    except OSError:
        sock.close()
        return None
    try:
        return _converse(sock, argv)
    finally:
        sock.close()


def start_server(path: str) -> None:
    """Starts a server for ``path`` in its own session, detached from this terminal; it races
    any other being started and the loser ends (``serve``)."""
    import json

    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        os.posix_spawn(
            sys.executable,
            [sys.executable, "-c", BOOT, path, json.dumps(import_path())],
            dict(os.environ),
            file_actions=[(os.POSIX_SPAWN_DUP2, devnull, fd) for fd in (0, 1, 2)],
            setsid=True,
        )
    except OSError:
        pass
    finally:
        os.close(devnull)


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
        "streams": [[stream.encoding, stream.errors] for stream in streams],
    }
    return marshal.dumps(body)


def _converse(sock: socket.socket, argv: list[str]) -> int | None:
    body = request(argv)
    if body is None:
        return None
    try:
        for fd in (0, 1, 2):
            os.fstat(fd)
        cwd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
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
    first = replies.readline()
    # The child names itself before it runs anything: any other first answer means nothing ran.
    if not first.startswith(b"pid "):
        return None
    child = int(first.split()[1])
    return _wait_for(child, replies)


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

    previous = {signum: signal.signal(signum, forward) for signum in FORWARDED}
    try:
        status = replies.readline()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    word, _, number = status.decode(errors="replace").strip().partition(" ")
    if word == "exit":
        return int(number)
    if word == "signal":
        # Die of the same signal, so that a shell sees what it would have seen.
        ended_by = int(number)
        sys.stdout.flush()
        signal.signal(ended_by, signal.SIG_DFL)
        os.kill(os.getpid(), ended_by)
        return 128 + ended_by
    sys.stderr.write("assay: the command server ended before the command did\n")
    return 1


__all__ = ["SWITCH", "run_served", "socket_path", "start_server", "wanted"]
