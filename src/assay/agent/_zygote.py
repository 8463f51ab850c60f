"""The zygote: an interpreter with the harness already imported that forks each trial's process.

A trial whose entrypoint is ``python3 train.py ...`` spends most of its start-up before its
first line: the interpreter, the launcher and the shell, then importing the harness. The
agent keeps one zygote (``python -m assay.agent._zygote AGENT_PID``) started at its own
start, with ``assay.core`` imported and waiting on a socket. For such a trial the agent sends
it the trial's argv, working directory, environment and its stdin/stdout/stderr (as file
descriptors); the zygote hands them to a child it forked ahead (each request's child is forked
as the previous one is handed its request, so neither the fork nor the child's set-up is
between one trial's end and the next one's start), a fresh process for this trial only, which

- starts a session of its own (its process group is the trial's, as the launcher's was) and asks
  for SIGKILL when the zygote dies;
- takes the trial's descriptors, directory, environment, ``sys.argv`` and ``sys.path`` (from the
  trial's ``PYTHONPATH``);
- runs the script as ``__main__`` and ends as an interpreter running it would (exit code,
  traceback, threads joined, atexit handlers).

Where the child cannot be what ``python3 train.py`` would have been (the trial's ``python3`` is
another interpreter, a ``PYTHON*`` variable that shapes start-up differs, the trial's path finds
another ``assay``, the script is missing), it execs the command instead: the same process, the
ordinary start. The zygote answers each request with the child's pid and, once it is reaped,
its wait status; the agent's death (its parent death signal) or the socket closing ends every
child's process group and the zygote.

One difference stays: children share the zygote's string-hash seed (``PYTHONHASHSEED``), so the
order of a set of strings is the same in every trial; a trial that sets ``PYTHONHASHSEED``
runs the ordinary way.

Messages are JSON, one per datagram of a ``SOCK_SEQPACKET`` pair. Agent to zygote:
``{"id", "argv", "cwd", "env"}`` with three descriptors. Zygote to agent: ``{"id", "pid"}``
when the child runs, ``{"pid", "status"}`` when it ended.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import json
import os
import selectors
import shutil
import signal
import socket
import sys
import types
from typing import Any, NoReturn

_PR_SET_PDEATHSIG = 1
MAX_MESSAGE = 1 << 20
"""The largest request (a trial's environment is the bulk of it)."""
# Variables that shape an interpreter's start-up: a trial must have the zygote's.
_STARTUP_EXEMPT = frozenset({"PYTHONPATH"})


def _prctl_death_signal(sig: int) -> None:
    # Not on Linux: the zygote's end still kills its children's groups.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)


def _startup_vars(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith("PYTHON") and k not in _STARTUP_EXEMPT}


class Zygote:
    def __init__(self, sock: socket.socket, agent_pid: int) -> None:
        self.sock = sock
        self.agent_pid = agent_pid
        self.children: set[int] = set()
        self.startup = _startup_vars(dict(os.environ))
        own = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        # The interpreter's own path (the standard library, site-packages), less the zygote's
        # PYTHONPATH and its first entry (the directory it was started from).
        self.base_path = [p for p in sys.path[1:] if p not in own]
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        os.set_blocking(self.wake_r, False)
        self.spare: tuple[int, socket.socket] | None = None
        """A child forked ahead of the next request, waiting for it: (pid, its end of a
        socket pair). The fork and the child's set-up are then not between one trial's end and
        the next one's start."""

    def serve(self) -> dict[str, Any] | None:
        """Answer requests until the agent goes. In a forked child: the request it runs."""
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, lambda *_: self._end())
        _prctl_death_signal(signal.SIGTERM)
        if os.getppid() != self.agent_pid:
            self._end()
        sel = selectors.DefaultSelector()
        sel.register(self.sock, selectors.EVENT_READ)
        sel.register(self.wake_r, selectors.EVENT_READ)
        waiting: dict[str, Any] | None = None
        while True:
            if self.spare is None:
                mine = self._fork_spare()
                if mine is not None:
                    sel.close()
                    return mine
            if waiting is not None:
                if self._hand_over(waiting):
                    waiting = None
                continue
            for key, _ in sel.select():
                if key.fileobj is self.sock:
                    request = self._receive(self.sock)
                    if request is None:
                        self._end()
                    if not self._hand_over(request):
                        waiting = request
                    break  # a new spare first, before anything else
                else:
                    with contextlib.suppress(BlockingIOError):
                        os.read(self.wake_r, 4096)
                    self._reap()

    @staticmethod
    def _receive(sock: socket.socket) -> dict[str, Any] | None:
        try:
            data, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 3)
        except OSError:
            return None
        if not data:
            return None
        request: dict[str, Any] = json.loads(data)
        request["fds"] = fds
        return request

    def _fork_spare(self) -> dict[str, Any] | None:
        """Fork the child that takes the next request. In the child: the request, once it
        came (None in the zygote)."""
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            mine.close()
            os.close(ready_r)
            self._become_trial(ready_w)
            _forget_import_caches()
            request = self._receive(theirs)
            theirs.close()
            if request is None:
                os._exit(0)  # the zygote ended before a request came
            for i, fd in enumerate(request.pop("fds")):
                os.dup2(fd, i)
                os.close(fd)
            return request
        theirs.close()
        os.close(ready_w)
        os.read(ready_r, 1)  # its session is made (or it died): a kill of its group reaches it
        os.close(ready_r)
        self.spare = (pid, mine)
        return None

    def _hand_over(self, request: dict[str, Any]) -> bool:
        """Give ``request`` to the spare child and tell the agent its pid; False when the spare
        died waiting (killed from outside), the request's descriptors kept for the next one. A
        spare killed during the hand-over itself ends as that trial, by that signal."""
        assert self.spare is not None
        pid, channel = self.spare
        self.spare = None
        try:
            fds = request["fds"]
            body = json.dumps({k: v for k, v in request.items() if k != "fds"}).encode()
            socket.send_fds(channel, [body], fds)
        except OSError:
            return False
        finally:
            channel.close()
        for fd in fds:
            os.close(fd)
        self.children.add(pid)
        self._send({"id": request["id"], "pid": pid})
        return True

    def _become_trial(self, ready_w: int) -> None:
        os.setsid()
        _prctl_death_signal(signal.SIGKILL)
        os.close(ready_w)
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        self.sock.close()
        os.close(self.wake_r)
        os.close(self.wake_w)

    def _reap(self) -> None:
        while self.children or self.spare is not None:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if self.spare is not None and pid == self.spare[0]:
                self.spare[1].close()
                self.spare = None  # it died waiting: another is forked
                continue
            if pid in self.children:
                self.children.discard(pid)
                self._send({"pid": pid, "status": status})

    def _send(self, message: dict[str, Any]) -> None:
        try:
            self.sock.send(json.dumps(message).encode())
        except OSError:
            self._end()

    def _end(self) -> NoReturn:
        """The agent is gone: no trial of it may keep running."""
        spare = [self.spare[0]] if self.spare is not None else []
        for pid in [*self.children, *spare]:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
        os._exit(0)


def run_trial(request: dict[str, Any], zygote: Zygote) -> None:
    """In the child: become the trial, or exec its command where this interpreter would not
    be the one ``argv`` names. Returns once the script ran; raises what it raised."""
    argv: list[str] = request["argv"]
    env: dict[str, str] = request["env"]
    os.chdir(request["cwd"])
    script = os.path.abspath(argv[1])
    path = _trial_path(env, script, zygote.base_path)
    if not _same_interpreter(argv[0], env) or not os.path.isfile(script) or path is None:
        _exec(argv, env)
    if _startup_vars(env) != zygote.startup:
        _exec(argv, env)
    _become_environment(env)
    sys.argv = [argv[1], *argv[2:]]
    sys.path[:] = path
    main = types.ModuleType("__main__")
    main.__file__ = script
    main.__cached__ = None  # type: ignore[attr-defined]
    from importlib.machinery import SourceFileLoader

    main.__loader__ = SourceFileLoader("__main__", script)
    sys.modules["__main__"] = main
    with io.open_code(script) as f:
        source = f.read()
    try:
        code = compile(source, script, "exec")
    except SyntaxError as exc:
        # As the interpreter reports it: the error's place in the script, no frame of ours.
        sys.excepthook(type(exc), exc.with_traceback(None), None)
        sys.exit(1)
    try:
        exec(code, main.__dict__)
    except SystemExit:
        raise
    except BaseException as exc:
        # As the interpreter reports it: the traceback from the script's frames on.
        tb = exc.__traceback__
        tb = tb.tb_next if tb is not None and tb.tb_next is not None else tb
        sys.excepthook(type(exc), exc.with_traceback(tb), tb)
        if isinstance(exc, KeyboardInterrupt):
            raise Interrupted from None
        sys.exit(1)


def _forget_import_caches() -> None:
    """The zygote's finders and their directory listings, dropped in the waiting child: the
    trial finds its modules afresh on its own path. Done before the request comes, since freeing
    what the zygote made copies a page per object (about 1.3 ms of a trial's start), and nothing
    is imported until the trial's code runs."""
    import importlib

    sys.path_importer_cache.clear()
    importlib.invalidate_caches()


def _become_environment(env: dict[str, str]) -> None:
    """``os.environ`` made ``env``, changing only what differs: most of a trial's environment is
    the agent's, which the zygote has, and each variable set or unset is a call into the C
    library's environment."""
    for name in [name for name in os.environ if name not in env]:
        del os.environ[name]
    for name, value in env.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


class Interrupted(BaseException):
    """The script ended on an uncaught KeyboardInterrupt (reported already): the trial shuts
    down, then ends by SIGINT, as the interpreter does."""


def _exit_status(code: object) -> int:
    """The exit status the interpreter gives ``sys.exit(code)``, printing a message as it does."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    with contextlib.suppress(Exception):
        sys.stderr.write(f"{code}\n")
    return 1


def end_trial(status: int, inherited: frozenset[str], *, interrupted: bool = False) -> NoReturn:
    """End the child as the interpreter ends a script, less tearing down what it inherited.

    A forked child's normal shutdown clears every module, the zygote's included, and each
    object it touches there is a page copied from the zygote: most of a trial's exit time. This
    does the shutdown's steps for what the trial made, in the interpreter's order, and skips the
    rest: threads that are not daemons are joined, ``atexit`` handlers run, the standard
    streams are flushed, ``sys.stdout`` and the others are set back to the interpreter's own
    (a stream the script put there is finalized like any object), the namespaces of
    ``__main__`` and of every module the trial imported are cleared (latest first) and its
    cycles collected, so what it left open is closed by its own ``__del__`` (a file's buffer
    written, a zip's directory), then the streams are flushed again, C's stdio buffers too, and
    the process ends with the status the interpreter would give (120 when a flush failed; by
    SIGINT after an uncaught KeyboardInterrupt). Daemon threads, which the interpreter stops
    before clearing anything, may run on during the clearing here: what they raise then is not
    printed."""
    import atexit
    import gc
    import threading

    try:
        threading._shutdown()  # type: ignore[attr-defined]
    except BaseException as exc:  # interrupted while joining; the interpreter goes on too
        with contextlib.suppress(Exception):
            sys.stderr.write(f"Exception ignored on threading shutdown: {exc!r}\n")
    atexit._run_exitfuncs()
    flushed = _flush_standard_streams()
    try:
        sys.stdin, sys.stdout, sys.stderr = sys.__stdin__, sys.__stdout__, sys.__stderr__
        threading.excepthook = lambda args: None
        _clear_modules([m for name, m in sys.modules.items() if name not in inherited])
        gc.collect()
        flushed = _flush_standard_streams() and flushed
        ctypes.CDLL(None).fflush(None)  # what C extensions printed through stdio
    except BaseException:  # an interrupt while ending: end all the same
        pass
    if interrupted:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    # As the interpreter's exit status is when a final flush fails.
    os._exit(status if flushed else 120)


def _flush_standard_streams() -> bool:
    """Flush ``sys.stdout`` then ``sys.stderr`` as the shutdown does: a stream without a
    ``closed`` it can read counts as open, stdout's failure is reported as an exception ignored
    in it, stderr's is not; False when either failed."""
    flushed = True
    for stream in (sys.stdout, sys.stderr):
        if stream is None or _closed(stream):
            continue
        try:
            stream.flush()
        except Exception as exc:
            flushed = False
            if stream is sys.stdout:
                with contextlib.suppress(Exception):
                    import traceback

                    sys.stderr.write(f"Exception ignored in: {stream!r}\n")
                    # From the stream's own frames, as the interpreter's flush shows it.
                    tb = exc.__traceback__
                    traceback.print_exception(
                        type(exc), exc, tb.tb_next if tb is not None else None, file=sys.stderr
                    )
    return flushed


def _closed(stream: object) -> bool:
    try:
        return bool(getattr(stream, "closed"))  # noqa: B009 - any error means "open" here
    except Exception:
        return False


def _clear_modules(modules: list[types.ModuleType]) -> None:
    """Drop what each module's names hold, latest imported first, as the interpreter's shutdown
    does (a name is set to None, so a ``__del__`` that looks one up finds None, not an error)."""
    for module in reversed(modules):
        namespace = getattr(module, "__dict__", None)
        if isinstance(namespace, dict):
            with contextlib.suppress(Exception):
                for key in [k for k in namespace if k != "__builtins__"]:
                    namespace[key] = None


def _same_interpreter(command: str, env: dict[str, str]) -> bool:
    found = shutil.which(command, path=env.get("PATH", os.defpath))
    if found is None:
        return False
    # The same directory (a virtual environment's own) and the same binary.
    return os.path.dirname(os.path.abspath(found)) == os.path.dirname(
        os.path.abspath(sys.executable)
    ) and os.path.realpath(found) == os.path.realpath(sys.executable)


def _trial_path(env: dict[str, str], script: str, base: list[str]) -> list[str] | None:
    """``sys.path`` as ``python3 SCRIPT`` would start with; None when ``assay`` would be found
    elsewhere than the zygote imported it from (the trial must start the ordinary way)."""
    extra = [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    path = [os.path.dirname(os.path.realpath(script)), *extra, *base]
    from importlib.machinery import PathFinder

    import assay

    spec = PathFinder.find_spec("assay", path)
    mine = assay.__spec__.origin if assay.__spec__ is not None else None
    if spec is None or spec.origin != mine:
        return None
    return path


def _exec(argv: list[str], env: dict[str, str]) -> NoReturn:
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as exc:
        sys.stderr.write(f"cannot run {argv[0]}: {exc.strerror}\n")
    os._exit(127)


def main() -> None:
    if len(sys.argv) != 3 or not sys.argv[1].isdigit() or not sys.argv[2].isdigit():
        sys.stderr.write("usage: python -m assay.agent._zygote AGENT_PID SOCKET_FD\n")
        sys.exit(2)
    # What every trial imports, imported once here (its start-up is what the zygote saves).
    import encodings.idna  # a connection to a host by name encodes it: the first report's

    import assay.core
    import assay.storage  # the harness's TensorBoard uploader

    del assay, encodings
    import gc

    # What the zygote holds is never collected in a child: without this, a child's final
    # collection touches every inherited object, copying each page (about 200 ms of exit).
    gc.freeze()
    sock = socket.socket(fileno=int(sys.argv[2]))
    zygote = Zygote(sock, int(sys.argv[1]))
    request = zygote.serve()
    if request is None:
        return
    inherited = frozenset(name for name in sys.modules if name != "__main__")
    interrupted = False
    try:
        run_trial(request, zygote)
        status = 0
    except SystemExit as exc:
        status = _exit_status(exc.code)
    except Interrupted:
        status, interrupted = 1, True
    # Outside the handler: nothing the ending raises is chained to the script's SystemExit.
    end_trial(status, inherited, interrupted=interrupted)


if __name__ == "__main__":
    main()
