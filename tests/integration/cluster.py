"""A real cluster for tests: master and agent processes on loopback, driven like a user would."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from assay import rest
from assay.client import Client, StoredLogin, TokenStore
from assay.errors import AssayError
from assay.ports import free_port
from tests.integration._forked import ForkedMaster, start_master

T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[2]
CONTEXTS = Path(__file__).parent / "contexts"


def _worker() -> int:
    """This pytest-xdist worker's number (``gw0``, ``gw1``...; 0 without xdist)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    return int(worker) if worker.isdigit() else 0


def rendezvous_port_base() -> int:
    """This test process's masters' ``rendezvous_port_base``: 100 ports apart per pytest-xdist
    worker, from 29500."""
    return 29500 + 100 * _worker()


def task_port_base() -> int:
    """This test process's masters' ``task_port_base``: 1000 ports apart per pytest-xdist
    worker, from 20000 (two workers' tasks never listen on the same port)."""
    return 20000 + 1000 * min(_worker(), 9)


def listens_on(pid: int, port: int) -> bool:
    """Whether process ``pid`` holds a listening TCP socket on ``port`` (from Linux's /proc).

    A free port probed for a master can be taken by another test's process before the master
    binds it; then something answers on the port that is not this master."""
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


def wait_for(
    what: str, check: Callable[[], T | None], timeout: float = 60.0, interval: float = 0.1
) -> T:
    """Poll ``check`` until it returns something truthy; fail with ``what`` on timeout."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = check()
        except AssayError as exc:
            last = exc
            value = None
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last error: {last})")


class Cluster:
    """A master and agents as separate processes, with their logs kept for failure reports."""

    def __init__(
        self,
        home: Path,
        *,
        db: str | None = None,
        master_config: Path | None = None,
        host: str | None = None,
        allowed_storage: Sequence[Path] = (),
    ) -> None:
        self.home = home
        self.host = host
        """Where the master listens (``--host``); None: loopback."""
        self.db = db
        self.master_config = master_config
        self.allowed_storage = tuple(allowed_storage)
        """Directories the master allows experiments' file-system checkpoint storage in
        (``allowed_checkpoint_storage.host_paths``, added to ``master_config``)."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.master: subprocess.Popen[bytes] | ForkedMaster | None = None
        self.agents: dict[str, subprocess.Popen[bytes]] = {}
        self.client = Client(self.url, timeout=30)
        self.admin_password = "admin-password-for-tests"
        self.env = {
            **os.environ,
            "ASSAY_HOME": str(home),
            "ASSAY_MASTER": self.url,
            "ASSAY_ADMIN_PASSWORD": self.admin_password,
            "ASSAY_AGENT_TOKEN": "agent-token-for-tests",
            # The `assay` commands tests run find the admin's sign-in here.
            "XDG_CONFIG_HOME": str(home.parent / "config"),
            "PYTHONUNBUFFERED": "1",
        }
        self.env.pop("ASSAY_USER_TOKEN", None)

    def auth_headers(self) -> dict[str, str]:
        """Headers that sign a raw HTTP request in as this cluster's admin."""
        return {"Authorization": f"Bearer {self.client.http.token}"}

    def sign_in(self, username: str = "admin", password: str | None = None) -> Client:
        """A client signed in as ``username`` (the admin by default)."""
        client = Client(self.url, timeout=30)
        client.login(username, password or self.admin_password)
        return client

    def add_user(self, username: str, password: str = "password-of-a-user") -> Client:
        """A new (non-admin) user, and a client signed in as them."""
        self.client.create_user(rest.UserCreate(username=username, password=password))
        return self.sign_in(username, password)

    def agent_token(self) -> str:
        """The cluster's agent token: the one its processes are given, else the one the master
        made and keeps in its home (where agents started with the master's ``--home`` read it)."""
        given = self.env.get("ASSAY_AGENT_TOKEN")
        return given or (self.home / "agent-token").read_text().strip()

    def _log(self, name: str) -> Any:
        (self.home / "logs").mkdir(parents=True, exist_ok=True)
        return (self.home / "logs" / f"{name}.log").open("ab")

    def start_master(self) -> None:
        args = [
            sys.executable,
            "-m",
            "assay.api",
            "--port",
            str(self.port),
            "--home",
            str(self.home),
        ]
        if self.db:
            args += ["--db", self.db]
        if self.host:
            args += ["--host", self.host]
        config = self._master_config()
        if config:
            args += ["--config", str(config)]
        (self.home / "logs").mkdir(parents=True, exist_ok=True)
        forked = start_master(args[3:], self.env, self.home / "logs" / "master.log")
        self.master = forked or subprocess.Popen(
            args, env=self.env, stdout=self._log("master"), stderr=subprocess.STDOUT
        )
        with self._stopped_on_failure():
            wait_for("the master to answer", self._master_ready, timeout=60)
            if self.client.http.token is None:
                session = self.client.login("admin", self.admin_password)
                store = TokenStore(self.home.parent / "config" / "assay" / "auth.json")
                store.put(self.url, StoredLogin("admin", session.token))

    def _master_config(self) -> Path | None:
        given = yaml.safe_load(self.master_config.read_text()) if self.master_config else None
        settings = dict(given or {})
        if self.allowed_storage:
            settings["allowed_checkpoint_storage"] = {
                "host_paths": [str(p) for p in self.allowed_storage]
            }
        # `make test` runs several test files at once: each process's masters give their gangs
        # rendezvous ports of their own, so two gangs never meet at the same ports.
        settings.setdefault("rendezvous_port_base", rendezvous_port_base())
        settings.setdefault("task_port_base", task_port_base())
        path = self.home.parent / f"{self.home.name}-master.yaml"
        path.write_text(yaml.safe_dump(settings))
        return path

    @contextlib.contextmanager
    def _stopped_on_failure(self) -> Iterator[None]:
        """A start that fails stops what this cluster runs: a fixture whose start raised never
        reaches the teardown that would (its master was left running after such a failure)."""
        try:
            yield
        except BaseException:
            self.stop()
            raise

    def _master_ready(self) -> bool:
        assert self.master is not None
        if self.master.poll() is not None:
            raise AssertionError(
                f"master exited with {self.master.returncode}:\n{self.log('master')}"
            )
        # This master, not another process that took the port first (it then fails to bind).
        return listens_on(self.master.pid, self.port) and bool(self.client.info())

    def start_agent(
        self,
        agent_id: str = "agent-1",
        slots: int = 2,
        pool: str = "default",
        labels: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        extra: tuple[str, ...] = (),
    ) -> None:
        """Start an agent and wait for it to connect; ``env``: variables of its own;
        ``extra``: more of its options (``--cpu``, ``--memory-mb``)."""
        args = [
            sys.executable, "-m", "assay.agent",
            "--master", self.url, "--id", agent_id, "--slots", str(slots),
            "--pool", pool, "--home", str(self.home), "--kill-grace", "3",
        ]  # fmt: skip
        for label in labels:
            args += ["--label", label]
        args += list(extra)
        self.agents[agent_id] = subprocess.Popen(
            args,
            env={**self.env, **(env or {})},
            stdout=self._log(f"agent-{agent_id}"),
            stderr=subprocess.STDOUT,
        )
        with self._stopped_on_failure():
            wait_for(
                f"agent {agent_id} to connect",
                lambda: any(a.id == agent_id and a.connected for a in self.client.agents()),
            )

    def kill_master(self, sig: int = signal.SIGKILL) -> None:
        assert self.master is not None
        self.master.send_signal(sig)
        self.master.wait(timeout=30)

    def stop(self) -> None:
        for proc in self.agents.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.agents.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        if self.master is not None and self.master.poll() is None:
            self.master.send_signal(signal.SIGTERM)
            try:
                self.master.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.master.kill()
        self.client.close()

    def log(self, name: str) -> str:
        path = self.home / "logs" / f"{name}.log"
        with contextlib.suppress(OSError):
            return path.read_text(errors="replace")[-6000:]
        return ""

    def cli(
        self, *args: str, timeout: float = 300, check: bool = False
    ) -> subprocess.CompletedProcess[str]:
        """Run the ``assay`` command as a user would."""
        result = subprocess.run(
            [sys.executable, "-c", "from assay.cli import main; main()", *args],
            check=False,
            env={**self.env, "COLUMNS": "160"},
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=ROOT,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"assay {' '.join(args)} exited {result.returncode}\n"
                f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
            )
        return result

    # -- helpers tests share -------------------------------------------------------------------

    def submit(self, config: str, context: Path = CONTEXTS / "counter", **kwargs: Any) -> int:
        from assay.context import pack_context

        exp = self.client.create_experiment(config, pack_context(context).data, **kwargs)
        return int(exp.id)

    def wait_state(self, experiment_id: int, *states: str, timeout: float = 120) -> rest.Experiment:
        return wait_for(
            f"experiment {experiment_id} to reach {states}",
            lambda: (e := self.client.experiment(experiment_id)).state in states and e,
            timeout=timeout,
        )

    def trial_logs(self, trial_id: int) -> list[str]:
        return [entry.line for entry in self.client.logs(trial_id)]


def serve(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """For fixtures: yield the started ``cluster`` to the test, stop it afterwards and, when the
    test failed, print the master's and every agent's log (``conftest`` records the outcome)."""
    try:
        yield cluster
    finally:
        cluster.stop()
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            for name in ["master", *(f"agent-{agent}" for agent in cluster.agents)]:
                print(f"--- {name} log ---\n" + cluster.log(name))
