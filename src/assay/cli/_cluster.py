"""``assay up``, ``down``, ``master`` and ``agent``: running a cluster."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from assay.cli._common import assay_home, cluster_file, console, fail
from assay.errors import AssayError
from assay.files import write_private

if TYPE_CHECKING:
    from assay.client import Client

STARTUP_TIMEOUT = 60.0


TlsCert = Annotated[
    Path | None, typer.Option(help="serve https with this certificate (PEM; with --tls-key)")
]
TlsKey = Annotated[Path | None, typer.Option(help="the TLS certificate's private key (PEM)")]
AllowedHost = Annotated[
    list[str] | None,
    typer.Option(help="a Host name the master may be reached by (repeatable; * for any)"),
]


def _guard_args(cert: Path | None, key: Path | None, hosts: list[str] | None) -> list[str]:
    args = []
    for flag, value in (("--tls-cert", cert), ("--tls-key", key)):
        if value is not None:
            args += [flag, str(value)]
    for name in hosts or []:
        args += ["--allowed-host", name]
    return args


def master(
    config: Annotated[
        Path | None, typer.Option(help="master.yaml: pools, storage, database")
    ] = None,
    host: Annotated[str | None, typer.Option(help="address to listen on")] = None,
    port: Annotated[int | None, typer.Option(help="port to listen on (default 8080)")] = None,
    db: Annotated[
        str | None, typer.Option(help="database URL (default: SQLite in ASSAY_HOME)")
    ] = None,
    tls_cert: TlsCert = None,
    tls_key: TlsKey = None,
    allowed_host: AllowedHost = None,
) -> None:
    """Run the master in the foreground."""
    args = [sys.executable, "-m", "assay.api"]
    for flag, value in (("--config", config), ("--host", host), ("--port", port), ("--db", db)):
        if value is not None:
            args += [flag, str(value)]
    args += _guard_args(tls_cert, tls_key, allowed_host)
    os.execv(sys.executable, args)


def agent(
    master_url: Annotated[str | None, typer.Option("--master", help="master URL")] = None,
    slots: Annotated[int | None, typer.Option(help="CPU slots when there is no GPU")] = None,
    pool: Annotated[str, typer.Option(help="resource pool to join")] = "default",
    label: Annotated[list[str] | None, typer.Option(help="agent label (repeatable)")] = None,
    agent_id: Annotated[
        str | None, typer.Option("--id", help="agent id (default: host name)")
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            help="the cluster's agent token (default $ASSAY_AGENT_TOKEN, else the agent-token "
            "file the master keeps in ASSAY_HOME)",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Run an agent in the foreground."""
    args = [sys.executable, "-m", "assay.agent", "--pool", pool]
    if master_url:
        args += ["--master", master_url]
    if slots is not None:
        args += ["--slots", str(slots)]
    if agent_id:
        args += ["--id", agent_id]
    for item in label or []:
        args += ["--label", item]
    env = dict(os.environ)
    if token:
        # In the agent's environment, not its command line, which every user can read.
        env["ASSAY_AGENT_TOKEN"] = token
    os.execve(sys.executable, args, env)


def _pid_file(name: str) -> Path:
    return assay_home() / "run" / f"{name}.pid"


def _alive(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True
    return b"assay" in cmdline


def _read_pid(name: str) -> int | None:
    try:
        pid = int(_pid_file(name).read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if _alive(pid) else None


def _spawn(name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    logs = assay_home() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log_file = (logs / f"{name}.log").open("ab")
    proc = subprocess.Popen(
        args,
        stdin=subprocess.DEVNULL,
        stdout=log_file,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env=env,
    )
    _pid_file(name).write_text(str(proc.pid))
    return proc


def _tail(name: str, lines: int = 20) -> str:
    path = assay_home() / "logs" / f"{name}.log"
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def up(
    port: Annotated[int, typer.Option(help="master port")] = 8080,
    slots: Annotated[
        int | None, typer.Option(help="CPU slots of the local agent (default: cores)")
    ] = None,
    config: Annotated[Path | None, typer.Option(help="master.yaml")] = None,
    db: Annotated[
        str | None, typer.Option(help="database URL (default: SQLite in ASSAY_HOME)")
    ] = None,
    tls_cert: TlsCert = None,
    tls_key: TlsKey = None,
    allowed_host: AllowedHost = None,
) -> None:
    """Start a single-machine cluster in the background: a master and one local agent."""
    from assay.client import Client

    home = assay_home()
    # It holds the database, the agent token and the admin's password: its owner's only.
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    (home / "run").mkdir(mode=0o700, exist_ok=True)
    url = f"{'https' if tls_cert else 'http'}://127.0.0.1:{port}"
    password = _admin_password(home)
    if _read_pid("master") is not None:
        with contextlib.suppress(AssayError):
            Client(url, timeout=2).info()
            _sign_in(url, password, home)
            console.print(f"cluster already up at {url} (stop it with `assay down`)")
            return
    master_args = [sys.executable, "-m", "assay.api", "--port", str(port), "--home", str(home)]
    if config is not None:
        master_args += ["--config", str(config)]
    if db is not None:
        master_args += ["--db", db]
    master_args += _guard_args(tls_cert, tls_key, allowed_host)
    # Only agents holding this token may join: other local processes cannot pose as one.
    token_file = home / "run" / "agent-token"
    token = secrets.token_urlsafe(24)
    write_private(token_file, token)
    env = {**os.environ, "ASSAY_AGENT_TOKEN": token, "ASSAY_ADMIN_PASSWORD": password}
    proc = _spawn("master", master_args, env)
    probe = Client(url, timeout=2)
    _wait(lambda: bool(probe.info()), proc, "master", f"the master did not answer at {url}")
    client = _sign_in(url, password, home)
    agent_args = [sys.executable, "-m", "assay.agent", "--master", url, "--home", str(home)]
    if slots is not None:
        agent_args += ["--slots", str(slots)]
    agent_proc = _spawn("agent", agent_args, env)
    _wait(
        lambda: any(a.connected for a in client.agents()),
        agent_proc,
        "agent",
        "the local agent did not connect",
    )
    cluster_file().write_text(json.dumps({"master": url}))
    agents = [a for a in client.agents() if a.connected]
    total = sum(len(a.slots) for a in agents)
    console.print(
        f"cluster up: master {url}, {len(agents)} agent(s), {total} slot(s); "
        f"state in {home}; stop it with `assay down`"
    )


ADMIN_PASSWORD_FILE = "admin-password"


def _admin_password(home: Path) -> str:
    """The password of the local cluster's admin: ``$ASSAY_ADMIN_PASSWORD``, else the one kept
    in ``ASSAY_HOME`` (readable by its owner only), made the first time."""
    given = os.environ.get("ASSAY_ADMIN_PASSWORD")
    if given:
        return given
    path = home / ADMIN_PASSWORD_FILE
    with contextlib.suppress(OSError):
        kept = path.read_text().strip()
        if kept:
            return kept
    made = secrets.token_urlsafe(18)
    write_private(path, made + "\n")
    return made


def _sign_in(url: str, password: str, home: Path) -> Client:
    """A client signed in to the local cluster: with the sign-in already kept for it, else
    as admin (kept for later commands)."""
    from assay.client import Client, StoredLogin, TokenStore
    from assay.errors import Unauthorized

    client = Client(url, timeout=5)
    if client.http.token is not None:
        with contextlib.suppress(Unauthorized):
            client.me()
            return client
    try:
        session = client.login("admin", password)
    except Unauthorized:
        fail(
            f"the master at {url} did not take the admin password kept in "
            f"{home / ADMIN_PASSWORD_FILE} (changed since?); sign in with "
            "`assay user login USERNAME`, then run `assay up` again"
        )
    TokenStore().put(client.url, StoredLogin("admin", session.token))
    return client


def _wait(ready: object, proc: subprocess.Popen[bytes], name: str, message: str) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            fail(f"the {name} exited with code {proc.returncode}:\n{_tail(name)}")
        with contextlib.suppress(AssayError):
            if ready():  # type: ignore[operator]
                return
        time.sleep(0.1)
    fail(f"{message} within {STARTUP_TIMEOUT:.0f}s; its log:\n{_tail(name)}")


def down() -> None:
    """Stop the cluster `assay up` started (the agent first, so its trials end cleanly)."""
    stopped = []
    for name, grace in (("agent", 20.0), ("master", 10.0)):
        pid = _read_pid(name)
        if pid is None:
            continue
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.05)
        if _alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        stopped.append(name)
        _pid_file(name).unlink(missing_ok=True)
    cluster_file().unlink(missing_ok=True)
    (assay_home() / "run" / "agent-token").unlink(missing_ok=True)
    if stopped:
        console.print(f"stopped: {', '.join(stopped)}")
    else:
        console.print("no cluster was running")
