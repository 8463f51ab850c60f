"""Real masters and agents for the reliability run: processes on loopback in throw-away
directories. Everything the run starts is recorded here (processes by id, with their start
time, so a reused id is never signalled; directories; PostgreSQL databases) and ended or removed
by ``TRACKER.cleanup()``, which also runs at exit."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import yaml

from assay.ports import free_port

T = TypeVar("T")

PG_ADMIN_URL = os.environ.get(
    "ASSAY_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
"""A PostgreSQL the run may create databases in (the tests' variable and default)."""

# -- processes -------------------------------------------------------------------------------


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (field 3, the state, first)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()


def start_time(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot (field 22 of /proc/PID/stat)."""
    fields = _stat_fields(pid)
    return int(fields[19]) if fields else None


def alive(pid: int, start: int | None = None) -> bool:
    """Whether ``pid`` runs (a zombie does not), and is the process that started at ``start``."""
    fields = _stat_fields(pid)
    if fields is None or fields[0] in ("Z", "X"):
        return False
    return start is None or int(fields[19]) == start


def stopped(pid: int) -> bool:
    fields = _stat_fields(pid)
    return fields is not None and fields[0] in ("T", "t")


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, theirs, ...), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields:
                children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def carrying(name: str, value: str) -> list[int]:
    """Processes whose environment or command line carries ``name=value`` (a process forked
    from the agent's zygote shows the zygote's initial environment, so its own pid file is the
    other way the run finds it)."""
    needle = f"{name}={value}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            environ = (entry / "environ").read_bytes().split(b"\0")
            cmdline = (entry / "cmdline").read_bytes()
            if needle in environ or needle in cmdline:
                found.append(int(entry.name))
    return [pid for pid in found if alive(pid)]


def listens_on(pid: int, port: int) -> bool:
    """Whether process ``pid`` holds a listening TCP socket on ``port`` (from /proc)."""
    listening = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                    listening.add(f"socket:[{fields[9]}]")
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return False
    for fd in fds:
        with contextlib.suppress(OSError):
            if os.readlink(fd) in listening:
                return True
    return False


def port_holders(port: int) -> list[int]:
    """The processes listening on ``port``, among those whose descriptors this user can read."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and listens_on(int(entry.name), port):
            found.append(int(entry.name))
    return found


def wait_for(what: str, check: Callable[[], T | None], timeout: float, every: float = 0.2) -> T:
    """Poll ``check`` until it returns something truthy (an HTTP error counts as not yet)."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while True:
        try:
            value = check()
        except (httpx.HTTPError, OSError, ValueError, KeyError) as exc:
            last, value = exc, None
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout:.0f}s for {what} (last error: {last})")
        time.sleep(every)


class Tracker:
    """What the run started, to be ended by id and removed, whatever happens."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []
        self.pids: dict[int, int] = {}
        """Processes the run's own processes started (trials, `assay up`'s): pid -> start."""
        self.dirs: list[Path] = []
        self.databases: list[str] = []

    def popen(self, args: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(args, **kwargs)
        self.procs.append(proc)
        return proc

    def adopt(self, pid: int, start: int | None = None) -> None:
        start = start if start is not None else start_time(pid)
        if start is not None:
            self.pids[pid] = start

    def tempdir(self, prefix: str) -> Path:
        path = Path(tempfile.mkdtemp(prefix=prefix))
        self.dirs.append(path)
        return path

    def cleanup(self) -> None:
        """SIGCONT then SIGTERM, SIGKILL after 10 s, to every live process the run started
        (by pid and start time); then drop its databases and remove its directories."""
        live: list[tuple[int, int | None]] = [(p.pid, None) for p in self.procs if p.poll() is None]
        live += [(pid, start) for pid, start in self.pids.items() if alive(pid, start)]
        for pid, start in live:
            if start is None or alive(pid, start):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGCONT)
                    os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for proc in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(max(0.1, deadline - time.monotonic()))
        while time.monotonic() < deadline and any(alive(p, s) for p, s in self.pids.items()):
            time.sleep(0.1)
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        for pid, start in self.pids.items():
            if alive(pid, start):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
        self.procs.clear()
        self.pids.clear()
        for name in self.databases:
            with contextlib.suppress(Exception):
                drop_database(name)
        self.databases.clear()
        for path in self.dirs:
            shutil.rmtree(path, ignore_errors=True)
        self.dirs.clear()


TRACKER = Tracker()
atexit.register(TRACKER.cleanup)


# -- PostgreSQL ------------------------------------------------------------------------------


def _libpq(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


def postgres_problem() -> str | None:
    """None when the PostgreSQL of ``PG_ADMIN_URL`` answers, else why not."""
    try:
        import psycopg

        with psycopg.connect(_libpq(PG_ADMIN_URL), connect_timeout=5):
            return None
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:200]}"


def create_database() -> tuple[str, str]:
    """A new, empty database: its name and its SQLAlchemy URL."""
    import psycopg

    name = f"assay_reliability_{secrets.token_hex(6)}"
    with psycopg.connect(_libpq(PG_ADMIN_URL), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    TRACKER.databases.append(name)
    return name, f"{PG_ADMIN_URL.rsplit('/', 1)[0]}/{name}"


def terminate_backends(name: str) -> int:
    """``pg_terminate_backend`` on every connection to database ``name``; how many ended."""
    import psycopg

    with psycopg.connect(_libpq(PG_ADMIN_URL), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        ).fetchall()
    return sum(1 for (ended,) in rows if ended)


def drop_database(name: str) -> None:
    import psycopg

    terminate_backends(name)
    with psycopg.connect(_libpq(PG_ADMIN_URL), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')


# -- a cluster -------------------------------------------------------------------------------

TERMINAL = ("COMPLETED", "CANCELED", "ERROR")


class Cluster:
    """A master (and agents) as separate processes on loopback, in a directory of its own:
    ``home`` (ASSAY_HOME), ``checkpoints`` (the master's checkpoint storage), ``logs``."""

    def __init__(
        self,
        name: str,
        *,
        db: str | None = None,
        settings: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.root = TRACKER.tempdir(f"assay-reliability-{name}-")
        self.home = self.root / "home"
        self.storage = self.root / "checkpoints"
        self.logs = self.root / "logs"
        for path in (self.home, self.storage, self.logs):
            path.mkdir()
        self.db = db
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.password = secrets.token_urlsafe(16)
        self.agent_token = secrets.token_urlsafe(16)
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_", "AWS_"))}
        self.env = {
            **keep,
            "ASSAY_HOME": str(self.home),
            "ASSAY_MASTER": self.url,
            "ASSAY_ADMIN_PASSWORD": self.password,
            "ASSAY_AGENT_TOKEN": self.agent_token,
            "XDG_CONFIG_HOME": str(self.root / "config"),
            "PYTHONUNBUFFERED": "1",
            **(env or {}),
        }
        self.settings = {
            "checkpoint_storage": {"type": "shared_fs", "host_path": str(self.storage)},
            **(settings or {}),
        }
        self.master: subprocess.Popen[bytes] | None = None
        self.agents: dict[str, subprocess.Popen[bytes]] = {}
        self.token = ""
        self.http = httpx.Client(base_url=self.url, timeout=60)

    # -- processes ---------------------------------------------------------------------------

    def _log(self, name: str) -> Any:
        return (self.logs / f"{name}.log").open("ab")

    def start_master(self, env: dict[str, str] | None = None, timeout: float = 120) -> None:
        config = self.root / "master.yaml"
        config.write_text(yaml.safe_dump(self.settings))
        args = [
            sys.executable, "-m", "assay.api", "--port", str(self.port),
            "--home", str(self.home), "--config", str(config),
        ]  # fmt: skip
        if self.db:
            args += ["--db", self.db]
        self.master = TRACKER.popen(
            args, env={**self.env, **(env or {})}, stdout=self._log("master"),
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        master = self.master

        def ready() -> bool:
            if master.poll() is not None:
                raise RuntimeError(f"the master exited with {master.returncode}: {self.tail()}")
            return listens_on(master.pid, self.port) and self.http.get("/api/v1/master").is_success

        wait_for("the master to answer", ready, timeout)
        if not self.token:
            self.token = self.login("admin", self.password)
            self.http.headers["Authorization"] = f"Bearer {self.token}"

    def kill_master(self, sig: int = signal.SIGKILL) -> None:
        assert self.master is not None
        self.master.send_signal(sig)
        self.master.wait(60)

    def start_agent(
        self, agent_id: str, slots: int = 1, kill_grace: float = 3.0, timeout: float = 90
    ) -> subprocess.Popen[bytes]:
        args = [
            sys.executable, "-m", "assay.agent", "--master", self.url, "--id", agent_id,
            "--slots", str(slots), "--home", str(self.home), "--kill-grace", str(kill_grace),
        ]  # fmt: skip
        proc = TRACKER.popen(
            args, env=self.env, stdout=self._log(f"agent-{agent_id}"), stderr=subprocess.STDOUT
        )
        self.agents[agent_id] = proc

        def connected() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(f"agent {agent_id} exited with {proc.returncode}")
            agents = self.get("/api/v1/agents")["agents"]
            return any(a["id"] == agent_id and a["connected"] for a in agents)

        wait_for(f"agent {agent_id} to connect", connected, timeout)
        return proc

    def stop(self) -> None:
        """The agents, then the master: SIGCONT (one may be frozen) and SIGTERM, SIGKILL after
        20 s. Trial processes they leave are ended by the tracker."""
        procs = [*self.agents.values(), *([self.master] if self.master else [])]
        for proc in procs:
            if proc.poll() is None:
                with contextlib.suppress(OSError):
                    proc.send_signal(signal.SIGCONT)
                    proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(20)
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.http.close()

    def tail(self, name: str = "master", chars: int = 3000) -> str:
        with contextlib.suppress(OSError):
            return (self.logs / f"{name}.log").read_text(errors="replace")[-chars:]
        return ""

    # -- the API -----------------------------------------------------------------------------

    def login(self, username: str, password: str) -> str:
        answer = self.http.post(
            "/api/v1/auth/login", json={"username": username, "password": password}
        )
        answer.raise_for_status()
        return str(answer.json()["token"])

    def get(self, path: str, token: str | None = None, **params: Any) -> Any:
        headers = {"Authorization": f"Bearer {token}"} if token else None
        answer = self.http.get(path, params=params or None, headers=headers)
        answer.raise_for_status()
        return answer.json()

    def add_user(self, username: str) -> str:
        """A user who is not an admin; their session token."""
        password = secrets.token_urlsafe(16)
        body = {"username": username, "password": password, "admin": False}
        self.http.post("/api/v1/users", json=body).raise_for_status()
        return self.login(username, password)

    def submit(
        self,
        config: str | bytes,
        context: bytes,
        *,
        token: str | None = None,
        activate: bool = True,
        timeout: float = 120,
    ) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token or self.token}"}
        return self.http.post(
            "/api/v1/experiments",
            data={"activate": "true" if activate else "false"},
            files={
                "config": (None, config),
                "context": ("context.tar.gz", context, "application/gzip"),
            },
            headers=headers,
            timeout=timeout,
        )

    def create(self, config: str, context: bytes) -> int:
        answer = self.submit(config, context)
        if not answer.is_success:
            raise RuntimeError(f"submission refused: {answer.status_code} {answer.text[:500]}")
        return int(answer.json()["id"])

    def experiment(self, exp_id: int) -> dict[str, Any]:
        found: dict[str, Any] = self.get(f"/api/v1/experiments/{exp_id}")
        return found

    def trials(self, exp_id: int) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.get(f"/api/v1/experiments/{exp_id}/trials")["trials"]
        return found

    def trial(self, trial_id: int) -> dict[str, Any]:
        found: dict[str, Any] = self.get(f"/api/v1/trials/{trial_id}")
        return found

    def metrics(self, trial_id: int) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.get(
            f"/api/v1/trials/{trial_id}/metrics", include_archived="true"
        )["metrics"]
        return found

    def checkpoints(self, exp_id: int) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.get(f"/api/v1/experiments/{exp_id}/checkpoints")[
            "checkpoints"
        ]
        return found

    def wait_ended(self, exp_id: int, timeout: float) -> str:
        """The experiment's state once it has ended; raises after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                state = str(self.experiment(exp_id)["state"])
                if state in TERMINAL:
                    return state
            time.sleep(0.5)
        raise TimeoutError(f"experiment {exp_id} did not end within {timeout:.0f}s")


@contextlib.contextmanager
def running(cluster: Cluster) -> Iterator[Cluster]:
    """``cluster``, stopped on leaving whatever happened."""
    try:
        yield cluster
    finally:
        cluster.stop()


def read_json_lines(path: Path) -> list[dict[str, Any]]:
    with contextlib.suppress(OSError):
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return []
