"""``assay up``, ``down``, ``master`` and ``agent``: running a cluster."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated
from urllib.parse import urlsplit

import typer

from assay.cli._common import console, err_console, fail
from assay.cli._home import assay_home, cluster_file
from assay.cli._state import state
from assay.cli._up_guard import check_port_free, home_lock, new_log
from assay.cli._up_options import (
    UpOptions,
    digest,
    ignored_option,
    keep_options,
    kept_options,
    running_record,
)
from assay.errors import AssayError
from assay.files import write_private
from assay.protocol import AGENT_TOKEN_FILE

if TYPE_CHECKING:
    from assay.client import Client
    from assay.config import MasterConfig

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
    log_format: Annotated[
        str | None, typer.Option(help="the log's lines: text (default) or json, one object a line")
    ] = None,
    check_upgrade: Annotated[
        bool,
        typer.Option(
            "--check-upgrade",
            help="say what a start would migrate in the database, change nothing, and exit",
        ),
    ] = False,
) -> None:
    """Run the master in the foreground."""
    args = [sys.executable, "-m", "assay.api"]
    if check_upgrade:
        args.append("--check-upgrade")
    options = (
        ("--config", config),
        ("--host", host),
        ("--port", port),
        ("--db", db),
        ("--log-format", log_format),
    )
    for flag, value in options:
        if value is not None:
            args += [flag, str(value)]
    args += _guard_args(tls_cert, tls_key, allowed_host)
    os.execv(sys.executable, args)


def agent(
    master_url: Annotated[str | None, typer.Option("--master", help="master URL")] = None,
    home: Annotated[
        Path | None,
        typer.Option(
            help="state directory (default $ASSAY_HOME or ~/.assay); a master's home on this "
            "machine gives the agent its token"
        ),
    ] = None,
    slots: Annotated[int | None, typer.Option(help="CPU slots when there is no GPU")] = None,
    pool: Annotated[str, typer.Option(help="resource pool to join")] = "default",
    label: Annotated[list[str] | None, typer.Option(help="agent label (repeatable)")] = None,
    agent_id: Annotated[
        str | None, typer.Option("--id", help="agent id (default: host name)")
    ] = None,
    cpu: Annotated[
        float | None, typer.Option(help="cores offered to jobs asking for cores (default: all)")
    ] = None,
    memory_mb: Annotated[
        int | None,
        typer.Option("--memory-mb", help="MiB offered to jobs asking for memory (default: all)"),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            help="the cluster's agent token (default $ASSAY_AGENT_TOKEN, else the agent-token "
            "file in the home: `assay master` keeps it in its ASSAY_HOME, `assay up` in "
            "ASSAY_HOME/run)",
            show_default=False,
        ),
    ] = None,
    container_runtime: Annotated[
        str | None,
        typer.Option(
            help="podman or docker: run the trials that name an image (environment.image) in "
            "containers (default $ASSAY_CONTAINER_RUNTIME; without one, the agent is given none "
            "of them)",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Run an agent in the foreground."""
    args = [sys.executable, "-m", "assay.agent", "--pool", pool]
    # `assay -m URL agent` names the master the way every other command is given it.
    master_url = master_url or state.master
    if master_url:
        args += ["--master", master_url]
    if home is not None:
        args += ["--home", str(home)]
    if slots is not None:
        args += ["--slots", str(slots)]
    if agent_id:
        args += ["--id", agent_id]
    for item in label or []:
        args += ["--label", item]
    if cpu is not None:
        args += ["--cpu", str(cpu)]
    if memory_mb is not None:
        args += ["--memory-mb", str(memory_mb)]
    if container_runtime:
        args += ["--container-runtime", container_runtime]
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


def _spawn(name: str, args: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[bytes], Path]:
    """Start ``name`` in the background, writing to a log of this attempt's own."""
    log = new_log(assay_home() / "logs", name)
    with log.open("ab") as log_file:
        proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )
    _pid_file(name).write_text(str(proc.pid))
    return proc, log


def _tail(name: str, lines: int = 20) -> str:
    path = assay_home() / "logs" / f"{name}.log"
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def up(
    port: Annotated[
        int | None,
        typer.Option(
            envvar="ASSAY_PORT",
            help="master port (default: $ASSAY_PORT, else the running cluster's, else the last "
            "`assay up`'s, else 8080)",
        ),
    ] = None,
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
    defaults: Annotated[
        bool,
        typer.Option(
            "--defaults",
            help="forget the options the last `assay up` was given: start with the ones given "
            "now and the defaults",
        ),
    ] = False,
) -> None:
    """Start a single-machine cluster in the background: a master and one local agent.

    What is up already is kept, on its own port: run again, it starts what is missing (the
    agent of a master that runs without one). Another --port, --slots, --db or --config is
    refused until `assay down`: the running cluster would ignore it.
    After `assay down`, `assay up` starts the cluster as the last `up` did: each option that
    `up` was given (port, slots, database, config, TLS, allowed hosts) is kept in ASSAY_HOME
    and used again unless given anew; --defaults forgets them.
    A port something else holds is refused before anything starts."""
    home = assay_home()
    # It holds the database, the agent token and the admin's password: its owner's only.
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    (home / "run").mkdir(mode=0o700, exist_ok=True)
    given = UpOptions.given(
        port=port,
        slots=slots,
        config=config,
        db=db,
        tls_cert=tls_cert,
        tls_key=tls_key,
        allowed_host=allowed_host,
    )
    with home_lock(home, "up"):
        _up(home, given, defaults)


def _up(home: Path, given: UpOptions, defaults: bool) -> None:
    from assay.client import Client
    from assay.config import load_master_config

    running_url = _running_master(home, given.port)
    running = running_url is not None
    record = running_record()
    # A running cluster keeps its options; one started again takes the last `up`'s.
    options = given.over(UpOptions() if defaults else kept_options(home))
    if running:
        problem = ignored_option(
            home,
            record,
            given.config_path,
            given.db,
            given.slots if _read_pid("agent") is not None else None,
        )
        if problem is not None:
            fail(problem)
        record["master"] = str(running_url)
    else:
        reused = options.reused(given)
        if reused:
            console.print(
                f"as the last `assay up`: {' '.join(reused)} (`assay up --defaults` starts "
                "without them)",
                highlight=False,
                soft_wrap=True,
                markup=False,
            )
        record = {"config": options.config, "db": digest(options.db)}
    settings = load_master_config(options.config_path)
    local_pool = _local_pool(settings)
    port = options.port
    if not running:
        port = port or settings.port
        # Before anything starts: a master that cannot listen would leave an agent and a
        # report of a cluster up on whatever holds the port.
        check_port_free(settings.host, port)
    url = running_url or f"{'https' if options.tls_cert else 'http'}://127.0.0.1:{port}"
    password = _admin_password(home)
    token_file = home / "run" / AGENT_TOKEN_FILE
    if not running:
        # Only agents holding this token may join: other local processes cannot pose as one.
        write_private(token_file, secrets.token_urlsafe(24))
    env = dict(os.environ)
    # The agent presents the token the master was started with (kept while the master runs).
    with contextlib.suppress(OSError):
        env["ASSAY_AGENT_TOKEN"] = token_file.read_text().strip()
    if not running:
        master_args = [
            sys.executable, "-m", "assay.api", "--port", str(port), "--home", str(home),
        ]  # fmt: skip
        if options.config is not None:
            master_args += ["--config", options.config]
        if options.db is not None:
            master_args += ["--db", options.db]
        master_args += _guard_args(options.cert_path, options.key_path, list(options.allowed_host))
        proc, _ = _spawn("master", master_args, {**env, "ASSAY_ADMIN_PASSWORD": password})
        probe = Client(url, timeout=2)
        _wait(lambda: bool(probe.info()), proc, "master", f"the master did not answer at {url}")
        # Kept once a master answered with them: the next `up` after `down` starts this one.
        keep_options(home, options, url)
    # The agent needs no sign-in (it has the agent token): the cluster comes up either way.
    client, refusal = _sign_in(url, password, home)
    started_agent = _read_pid("agent") is None and local_pool is not None
    if started_agent:
        assert local_pool is not None
        _start_agent(url, home, options.slots, env, client, local_pool)
        record["slots"] = options.slots if options.slots is not None else _live_slots(client)
    elif local_pool is None:
        console.print("no local agent: every pool of the config is run by Slurm or Kubernetes")
    cluster_file().write_text(json.dumps({**record, "master": url}))
    if running and not started_agent:
        console.print(f"cluster already up at {url} (stop it with `assay down`)")
    elif client is None:
        console.print(
            f"cluster up: master {url}, local agent connected; state in {home}; "
            "stop it with `assay down`"
        )
    else:
        agents = [a for a in client.agents() if a.connected]
        total = sum(len(a.slots) for a in agents)
        console.print(
            f"cluster up: master {url}, {len(agents)} agent(s), {total} slot(s); "
            f"state in {home}; stop it with `assay down`"
        )
    if client is not None:
        _print_ui_link(client, url)
    # Determined's own `det` and SDK reach the same master under /det (docs/det-cli.md).
    console.print(
        f"Determined's det: export DET_MASTER={url}/det",
        highlight=False,
        markup=False,
        soft_wrap=True,  # copied and piped whole, however long the master's address
    )
    if refusal is not None:
        err_console.print(f"[bold yellow]warning:[/] {refusal}", highlight=False, soft_wrap=True)


def _print_ui_link(client: Client, url: str) -> None:
    """The web UI's address with a one-time sign-in token: the first visit needs no password.
    The token is in the fragment (``#token=``), which the browser keeps to the page: it is
    never sent to a server, kept in a server's log or passed on as a Referer. A master too old
    to make one gets the plain address."""
    from urllib.parse import quote

    from assay.errors import AssayError

    try:
        made = client.one_time_token()
        link = f"{url}/#token={quote(made.token, safe='')}"
        minutes = max(1, round((made.expires_at - time.time()) / 60))
        note = (
            f" (a one-time sign-in link, good for {minutes} minutes; `assay up` again for another)"
        )
    except AssayError:
        link, note = f"{url}/", ""
    console.print(f"web UI: {link}{note}", highlight=False, soft_wrap=True, markup=False)


def _live_slots(client: Client | None) -> int | None:
    """The slots the local agent (named after this host, as ``assay up`` starts it) offers."""
    if client is None:
        return None
    here = socket.gethostname()
    return next((len(a.slots) for a in client.agents() if a.id == here and a.connected), None)


def _running_master(home: Path, port: int | None) -> str | None:
    """The URL of the master this ``ASSAY_HOME``'s ``assay up`` started, if it still runs;
    None when there is none to keep. A second master on the same database would fight the
    first over it, and ``down`` would stop only the one recorded last: ``up`` never starts one
    while the recorded master lives, and says what to do instead."""
    from assay.client import Client

    pid = _read_pid("master")
    if pid is None:
        return None
    try:
        recorded = str(json.loads(cluster_file().read_text())["master"])
    except (OSError, ValueError, KeyError, TypeError):
        recorded = f"http://127.0.0.1:{port or 8080}"  # an older `up` kept no record
    answers = False
    with contextlib.suppress(AssayError):
        answers = bool(Client(recorded, timeout=2).info())
    if not answers:
        fail(
            f"the master of ASSAY_HOME={home} (pid {pid}) runs but does not answer at "
            f"{recorded}; `assay down` stops it (its log: {home / 'logs' / 'master.log'})"
        )
    if port is not None and urlsplit(recorded).port != port:
        fail(
            f"a cluster is already up at {recorded} (ASSAY_HOME={home}); "
            "`assay down` first to move it"
        )
    return recorded


def _local_pool(settings: MasterConfig) -> str | None:
    """The pool the local agent joins: ``default`` where it is a pool of agents, else the
    first pool of agents; None where Slurm or Kubernetes runs every pool."""
    agents = [p.pool_name for p in settings.resource_pools if p.type == "agents"]
    if "default" in agents:
        return "default"
    return agents[0] if agents else None


def _start_agent(
    url: str,
    home: Path,
    slots: int | None,
    env: dict[str, str],
    client: Client | None,
    pool: str = "default",
) -> None:
    """Start the local agent in ``pool`` and wait until it has joined: as the master lists
    its agents to ``client``, or, signed in as no one, as the agent's log says."""
    agent_args = [sys.executable, "-m", "assay.agent", "--master", url, "--home", str(home)]
    agent_args += ["--pool", pool]
    if slots is not None:
        agent_args += ["--slots", str(slots)]
    agent_proc, log = _spawn("agent", agent_args, env)

    def joined() -> bool:
        if client is not None:
            return any(a.connected and a.pool == pool for a in client.agents())
        return b" connected to " in log.read_bytes()

    _wait(joined, agent_proc, "agent", "the local agent did not connect")


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


def _sign_in(url: str, password: str, home: Path) -> tuple[Client | None, str | None]:
    """A client signed in to the local cluster: with the sign-in already kept for it, else
    as admin (kept for later commands); else None and why, with how to sign in."""
    from assay.client import Client, StoredLogin, TokenStore
    from assay.errors import Unauthorized

    client = Client(url, timeout=5)
    if client.http.token is not None:
        with contextlib.suppress(Unauthorized):
            client.me()
            return client, None
    try:
        session = client.login("admin", password)
    except Unauthorized:
        source = (
            "in ASSAY_ADMIN_PASSWORD"
            if os.environ.get("ASSAY_ADMIN_PASSWORD")
            else f"kept in {home / ADMIN_PASSWORD_FILE}"
        )
        return None, (
            f"could not sign you in to {url} automatically: the master did not take the admin "
            f"password {source} (changed since?); sign in with `assay user login admin` "
            "(or as another user)"
        )
    TokenStore().put(client.url, StoredLogin("admin", session.token))
    return client, None


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


def down(
    grace: Annotated[
        float,
        typer.Option(
            min=0,
            help="seconds the running trials get to checkpoint and exit before they are killed",
        ),
    ] = 60.0,
) -> None:
    """Stop the cluster `assay up` started, losing no work: running trials are asked to
    checkpoint and exit (killed after --grace seconds), and resume from their latest checkpoint
    at the next `assay up`, with no restart counted."""
    home = assay_home()
    with home_lock(home, "down"):
        _down(home, grace)


def _down(home: Path, grace: float) -> None:
    drained = _drain(home, grace)
    stopped = []
    for name, wait in (("agent", 20.0), ("master", 10.0)):
        pid = _read_pid(name)
        if pid is None:
            continue
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.05)
        if _alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        stopped.append(name)
        _pid_file(name).unlink(missing_ok=True)
    cluster_file().unlink(missing_ok=True)
    (home / "run" / AGENT_TOKEN_FILE).unlink(missing_ok=True)
    if not stopped:
        console.print("no cluster was running")
        return
    said = f"stopped: {', '.join(stopped)}"
    if drained and drained[0]:
        asked, killed = drained
        said += f"; {len(asked) - len(killed)} trial(s) checkpointed and exited"
        if killed:
            said += f", {len(killed)} killed after the {grace:g}s grace"
        said += "; they resume from their latest checkpoint at the next `assay up`"
    console.print(said)


def _drain(home: Path, grace: float) -> tuple[list[int], list[int]] | None:
    """Ask the master to stop the cluster's work: every running trial checkpoints and exits,
    for up to ``grace`` seconds. The trials it asked, and those still running at the end;
    None when there was no master to ask (its trials are then stopped with their agent)."""
    from assay.client import Client
    from assay.errors import Unauthorized
    from assay.rest import DRAIN_WAIT_MAX

    if _read_pid("master") is None:
        return None
    try:
        url = str(json.loads(cluster_file().read_text())["master"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    # The cluster's agent token says this machine runs the cluster; a master configured with
    # another token takes its admin's sign-in instead.
    tokens: list[str | None] = []
    with contextlib.suppress(OSError):
        tokens.append((home / "run" / AGENT_TOKEN_FILE).read_text().strip() or None)
    tokens.append(None)
    try:
        for token in tokens:
            client = Client(url, token=token, timeout=10)
            try:
                status = client.drain(0.0)
                break
            except Unauthorized:
                if token is None:
                    raise
        asked = list(status.running_trials)
        if asked:
            console.print(
                f"asking {len(asked)} running trial(s) to checkpoint and exit (up to {grace:g}s)"
            )
        deadline = time.monotonic() + grace
        while status.running_trials and (left := deadline - time.monotonic()) > 0:
            status = client.drain(min(left, DRAIN_WAIT_MAX))
    except AssayError as exc:
        err_console.print(
            f"[bold yellow]warning:[/] could not ask {url} to checkpoint the running trials "
            f"({exc.message}); stopping them with the agent",
            highlight=False,
            soft_wrap=True,
        )
        return None
    return asked, list(status.running_trials)
