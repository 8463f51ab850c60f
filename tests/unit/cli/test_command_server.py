"""The command server: ``assay`` hands its command to a warm process that forks a child for it.

Each test gets its own runtime directory (``XDG_RUNTIME_DIR``), so it starts its own server, as
the first ``assay`` of a user does, and stops it at the end. Every behaviour is checked against
the same command run in its own process (``ASSAY_CLI_SERVER=off``): a served command must be
indistinguishable from it, but for its speed.
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

import assay
from assay.cli._served import runtime_dir, socket_path, wanted
from tests.processes import alive, children_of, command_servers

RUN = """
import json, os, sys
from assay.cli import main
try:
    main()
finally:
    with open(os.environ["MODULES"], "w") as out:
        json.dump(sorted(sys.modules), out)
"""
"""``assay``, writing down at its end the modules its own process loaded."""

UNREACHABLE = "http://127.0.0.1:9"
ASSAY = [sys.executable, "-c", "from assay.cli import main; main()"]


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str
    modules: set[str]

    @property
    def served(self) -> bool:
        """Whether the command ran in the server: this process never loaded the CLI."""
        return "typer" not in self.modules


@dataclass
class Setting:
    tmp: Path
    env: dict[str, str]

    @property
    def sockets(self) -> Path:
        return Path(self.env["XDG_RUNTIME_DIR"]) / "assay"

    def assay(self, *args: str, cwd: Path | None = None, **env: str) -> Ran:
        listing = self.tmp / f"modules-{time.monotonic_ns()}.json"
        done = subprocess.run(
            [sys.executable, "-c", RUN, *args],
            env={**self.env, **env, "MODULES": str(listing)},
            cwd=cwd or self.tmp,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        return Ran(done.returncode, done.stdout, done.stderr, set(json.loads(listing.read_text())))

    def in_process(self, *args: str, cwd: Path | None = None) -> Ran:
        return self.assay(*args, cwd=cwd, ASSAY_CLI_SERVER="off")

    def servers(self) -> list[int]:
        """The pids of the servers that hold a lock here."""
        pids = []
        for lock in self.sockets.glob("*.lock"):
            with contextlib.suppress(ValueError):
                pid = int(lock.read_text().strip())
                if alive(pid):
                    pids.append(pid)
        return pids

    def started(self) -> int:
        """The pid of a server that answers, started by a first command if need be."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            answering = [sock for sock in self.sockets.glob("*.sock") if _answers(sock)]
            if answering and self.servers():
                return self.servers()[0]
            if not self.servers():
                self.assay("--version")
            time.sleep(0.1)
        raise AssertionError("no command server started within 60 s")


def _answers(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX) as sock:
        try:
            sock.connect(str(path))
        except OSError:
            return False
    return True


def _wait_gone(pid: int, seconds: float = 20) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def setting(tmp_path: Path) -> Iterator[Setting]:
    # A short directory of its own: a socket's path is at most 107 bytes, and pytest's own
    # (its numbered base, xdist's worker) can leave too little room under tmp_path.
    run = Path(tempfile.mkdtemp(prefix="assay-run-"))
    run.chmod(0o700)
    env = {
        **os.environ,
        "XDG_RUNTIME_DIR": str(run),
        "ASSAY_HOME": str(tmp_path / "home"),
        "PYTHONPATH": os.pathsep.join(sys.path),
        "COLUMNS": "120",
    }
    for name in ("ASSAY_CLI_SERVER", "ASSAY_MASTER", "ASSAY_PORT"):
        env.pop(name, None)
    made = Setting(tmp_path, env)
    yield made
    # Every server of this directory, one still starting (no pid in its lock yet) included.
    for pid in command_servers(run):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        _wait_gone(pid)
    shutil.rmtree(run, ignore_errors=True)


def test_a_command_after_the_first_runs_in_the_server_and_prints_the_same(
    setting: Setting,
) -> None:
    setting.started()
    served = setting.assay("e", "-h")
    alone = setting.in_process("e", "-h")
    assert served.served and not alone.served
    assert (served.returncode, served.stdout, served.stderr) == (0, alone.stdout, alone.stderr)
    assert "list" in served.stdout


def test_a_served_assay_loads_only_the_standard_library_and_its_own_entry(
    setting: Setting,
) -> None:
    setting.started()
    ran = setting.assay("--version")
    assert ran.served and ran.stdout == f"assay {_version()}\n"
    ours = {m for m in ran.modules if m.split(".")[0] not in sys.stdlib_module_names}
    entry = {"__main__", "assay", "assay.cli", "assay.cli._served"}
    assert ours <= entry | {"sitecustomize", "_distutils_hack"}


def _version() -> str:
    from importlib.metadata import version

    return version("assay")


def test_exit_status_and_errors_are_those_of_the_command(setting: Setting) -> None:
    setting.started()
    for args in (("-m", UNREACHABLE, "e", "list"), ("e", "lisst")):
        served = setting.assay(*args)
        alone = setting.in_process(*args)
        assert served.served
        assert (served.returncode, served.stdout, served.stderr) == (
            alone.returncode,
            alone.stdout,
            alone.stderr,
        )
    assert setting.assay("e", "lisst").returncode == 2
    assert (
        "no master answering at http://127.0.0.1:9"
        in setting.assay("-m", UNREACHABLE, "e", "list").stderr
    )


def test_the_command_runs_in_the_callers_directory_and_environment(setting: Setting) -> None:
    setting.started()
    here = setting.tmp / "project"
    here.mkdir()
    (here / "search.yaml").write_text(
        "entrypoint: python3 train.py\n"
        "searcher: {name: random, metric: loss, max_trials: 3, max_length: {batches: 10}}\n"
        "hyperparameters: {lr: {type: double, minval: 0.001, maxval: 0.1}}\n"
    )
    served = setting.assay("preview-search", "search.yaml", cwd=here)
    alone = setting.in_process("preview-search", "search.yaml", cwd=here)
    assert served.served and served.returncode == 0, served.stderr
    assert served.stdout == alone.stdout and "3" in served.stdout
    ran = setting.assay("e", "list", ASSAY_MASTER="http://127.0.0.1:7")
    assert ran.served and "http://127.0.0.1:7" in ran.stderr


def test_commands_at_once_each_get_their_own_answer(setting: Setting) -> None:
    setting.started()
    with ThreadPoolExecutor(max_workers=8) as pool:
        runs = list(
            pool.map(
                lambda args: setting.assay(*args),
                [("--version",), ("-m", UNREACHABLE, "e", "list")] * 4,
            )
        )
    for index, ran in enumerate(runs):
        assert ran.served
        if index % 2 == 0:
            assert (ran.returncode, ran.stdout) == (0, f"assay {_version()}\n")
        else:
            assert ran.returncode == 1 and "no master answering" in ran.stderr
            assert ran.stdout == ""


@contextlib.contextmanager
def _silent_master() -> Iterator[socket.socket]:
    """A master that takes connections and never answers: a command waits on it."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        silent.settimeout(60)
        yield silent


def _waiting(silent: socket.socket, **env: str) -> tuple[subprocess.Popen[str], socket.socket]:
    """``assay e list`` started against ``silent``, once it has reached it."""
    url = f"http://127.0.0.1:{silent.getsockname()[1]}"
    # Under `nohup`, when the environment says so: the command ignores SIGHUP.
    nohup = ["nohup"] if "IGNORE_HUP" in env else []
    proc = subprocess.Popen(
        [*nohup, *ASSAY, "-m", url, "e", "list"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    conn, _ = silent.accept()
    return proc, conn


def _signalled_on_and_off(
    setting: Setting, signum: int, first: Callable[[str], None] = lambda mode: None
) -> dict[str, tuple[int, str, str]]:
    """How a command waiting on a silent master ends when signalled, with the server on and
    off (``first(mode)`` runs just before the signal): its status, stdout and stderr."""
    ended = {}
    with _silent_master() as silent:
        for mode in ("on", "off"):
            proc, conn = _waiting(silent, **setting.env, ASSAY_CLI_SERVER=mode)
            with conn:
                first(mode)
                proc.send_signal(signum)
                out, err = proc.communicate(timeout=30)
            ended[mode] = (proc.returncode, out, err)
    return ended


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_ends_the_command_as_it_ends_one_in_its_own_process(
    setting: Setting, signum: int
) -> None:
    server = setting.started()
    ended = _signalled_on_and_off(setting, signum)
    assert ended["on"] == ended["off"]
    assert ended["on"][0] in (-signum, 128 + signum, 1)
    assert children_of(server) == [], "the command's process was left running"


def test_a_signal_the_caller_ignores_is_ignored_by_the_command(setting: Setting) -> None:
    setting.started()
    with _silent_master() as silent:
        for mode in ("on", "off"):
            proc, conn = _waiting(silent, **setting.env, ASSAY_CLI_SERVER=mode, IGNORE_HUP="1")
            with conn:
                proc.send_signal(signal.SIGHUP)
                time.sleep(0.5)
                assert proc.poll() is None, f"SIGHUP ended the command (server {mode})"
                proc.terminate()
                proc.communicate(timeout=30)


@pytest.mark.parametrize("unbuffered", ["", "1"])
def test_output_that_cannot_be_written_fails_the_command_as_it_fails_alone(
    setting: Setting, unbuffered: str
) -> None:
    setting.env.pop("PYTHONUNBUFFERED", None)
    if unbuffered:
        setting.env["PYTHONUNBUFFERED"] = unbuffered
    setting.started()
    ended = {}
    for mode in ("on", "off"):
        with open("/dev/full", "w") as full:
            done = subprocess.run(
                [*ASSAY, "--version"],
                env={**setting.env, "ASSAY_CLI_SERVER": mode},
                stdout=full,
                stderr=subprocess.PIPE,
                text=True,
                timeout=60,
                check=False,
            )
        ended[mode] = done.returncode
        assert "No space left on device" in done.stderr
    assert ended["on"] == ended["off"] != 0


@pytest.mark.parametrize("mode", ["on", "off"])
def test_a_closed_stdout_is_one_line_of_error(setting: Setting, mode: str) -> None:
    setting.started()
    done = subprocess.run(
        ["bash", "-c", 'exec "$@" >&-', "assay", *ASSAY, "e", "list"],
        env={**setting.env, "ASSAY_CLI_SERVER": mode},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr == "error: standard output is closed; nothing could be shown\n"


def test_a_command_whose_caller_is_killed_dies_with_it(setting: Setting) -> None:
    server = setting.started()
    with _silent_master() as silent:
        proc, conn = _waiting(silent, **setting.env)
        with conn:
            command = children_of(server)
            assert command, "the command never ran in the server"
            proc.kill()  # SIGKILL: nothing is passed on.
            proc.communicate()
            assert all(_wait_gone(pid) for pid in command), "the command outlived its caller"


def test_a_stopped_server_lets_its_commands_finish_and_removes_its_socket(
    setting: Setting,
) -> None:
    server = setting.started()
    with _silent_master() as silent:
        proc, conn = _waiting(silent, **setting.env)
        with conn:
            os.kill(server, signal.SIGTERM)
            deadline = time.monotonic() + 20
            while list(setting.sockets.glob("*.sock")) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not list(setting.sockets.glob("*.sock")), "the socket outlived the stop"
            assert alive(server), "the server ended before its command"
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=30)
    assert proc.returncode in (130, -signal.SIGINT, 1)
    assert _wait_gone(server)


def test_a_command_whose_server_dies_still_ends_its_caller_with_its_status(
    setting: Setting,
) -> None:
    server = setting.started()

    def kill_the_server(mode: str) -> None:
        if mode == "on":
            os.kill(server, signal.SIGKILL)
            assert _wait_gone(server)

    ended = _signalled_on_and_off(setting, signal.SIGINT, first=kill_the_server)
    assert ended["on"] == ended["off"]


def test_a_terminal_reaches_the_command_with_its_size(setting: Setting) -> None:
    setting.started()
    screens = {}
    for mode in ("on", "off"):
        pid, fd = pty.fork()
        if pid == 0:  # pragma: no cover - the child execs
            env = {**setting.env, "ASSAY_CLI_SERVER": mode}
            env.pop("COLUMNS")
            os.execve(
                sys.executable,
                [*ASSAY, "e", "-h"],
                env,
            )
        termios.tcsetwinsize(fd, (24, 50))
        screen = b""
        with contextlib.suppress(OSError):
            while chunk := os.read(fd, 65536):
                screen += chunk
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        screens[mode] = screen.decode()
    assert screens["on"] == screens["off"]
    assert max(len(line) for line in screens["on"].splitlines()) <= 50
    assert "Submit an experiment" in screens["on"]


def test_a_server_whose_code_changed_retires_and_the_command_runs_anyway(
    setting: Setting,
) -> None:
    # A copy of the package stands for an install that is upgraded in place.
    copy = setting.tmp / "site"
    shutil.copytree(
        Path(assay.__file__).parent,
        copy / "assay",
        ignore=shutil.ignore_patterns("__pycache__", "dist", "node_modules"),
    )
    setting.env["PYTHONPATH"] = os.pathsep.join([str(copy), *sys.path])
    old = setting.started()
    assert setting.assay("--version").served
    edited = copy / "assay" / "errors.py"
    later = edited.stat().st_mtime_ns + 5_000_000_000
    os.utime(edited, ns=(later, later))
    ran = setting.assay("--version")
    assert not ran.served and ran.returncode == 0 and ran.stdout.startswith("assay ")
    assert _wait_gone(old), "a stale server kept running"
    new = setting.started()
    assert new != old
    assert setting.assay("--version").served


def test_off_runs_in_its_own_process_and_starts_no_server(setting: Setting) -> None:
    ran = setting.in_process("--version")
    assert ran.returncode == 0 and not ran.served
    assert not setting.sockets.exists() or not list(setting.sockets.iterdir())


def test_two_servers_started_at_once_leave_one(setting: Setting) -> None:
    setting.sockets.mkdir(mode=0o700)
    env = {**setting.env, "PYTHONPATH": os.pathsep.join(sys.path)}
    code = (
        "import sys; from assay.cli._served import socket_path, start_server; "
        "start_server(socket_path(sys.argv[1])); start_server(socket_path(sys.argv[1]))"
    )
    subprocess.run([sys.executable, "-c", code, str(setting.sockets)], env=env, check=True)
    setting.started()
    time.sleep(1)
    assert len(command_servers(setting.sockets)) == 1


@pytest.mark.parametrize(
    ("argv", "served"),
    [
        (["e", "list"], True),
        (["-m", "http://x:1", "--debug", "t", "logs", "3"], True),
        (["up"], False),
        (["-m", "http://x:1", "down"], False),
        (["--master=http://x:1", "master"], False),
        (["agent", "list"], False),
        (["e", "create", "--local", "c.yaml", "."], False),
        (["user", "login", "ann"], False),
        (["preview-search", "/dev/fd/63"], False),
        (["e", "create", "--config-file=/proc/self/fd/3"], False),
        (["--install-completion"], False),
        (["--show-completion=bash"], False),
    ],
)
def test_commands_that_run_a_clusters_processes_stay_in_the_caller(
    argv: list[str], served: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ASSAY_CLI_SERVER", raising=False)
    assert wanted(argv) is served
    monkeypatch.setenv("ASSAY_CLI_SERVER", "off")
    assert wanted(argv) is False


def test_the_server_is_linux_only_elsewhere_every_command_runs_in_the_caller(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ASSAY_CLI_SERVER", raising=False)
    monkeypatch.setattr(sys, "platform", "darwin")
    assert wanted(["e", "list"]) is False


def test_a_failure_before_a_child_runs_leaves_the_command_to_the_caller(
    setting: Setting,
) -> None:
    # A runtime base that is a file, not a directory: nothing can be made under it.
    base = setting.tmp / "not-a-directory"
    base.write_text("")
    ran = setting.assay("--version", XDG_RUNTIME_DIR=str(base), TMPDIR=str(base))
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, f"assay {_version()}\n", "")
    assert not ran.served


def test_a_runtime_directory_others_may_enter_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    tmp_path.chmod(0o700)
    (tmp_path / "assay").mkdir(mode=0o755)
    (tmp_path / "assay").chmod(0o755)
    assert runtime_dir() is None
    (tmp_path / "assay").chmod(0o700)
    assert runtime_dir() == str(tmp_path / "assay")


@pytest.mark.parametrize("xdg", ["shared", "relative"])
def test_a_runtime_base_that_is_not_the_users_own_falls_back_to_tmpdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, xdg: str
) -> None:
    # Under `sudo -E` the variable names another user's directory; a relative one is no base.
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(shared) if xdg == "shared" else "run")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    assert runtime_dir() == str(tmp_path / f"assay-{os.getuid()}")
    assert not (shared / "assay").exists()


def test_each_python_environment_has_its_own_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = socket_path(str(tmp_path))
    monkeypatch.setattr(sys, "path", [*sys.path, str(tmp_path / "elsewhere")])
    assert socket_path(str(tmp_path)) != first
    assert len(first.encode()) < 100, "a Unix socket's path must fit in 108 bytes"
