"""The master's settings (``assay master --config master.yaml``) and its resource pools."""

from __future__ import annotations

import ipaddress
import posixpath
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field

from assay.config._base import ConfigModel, Problem, config_error, show
from assay.config._errors import invalid, validate_as
from assay.config._limits import DEFAULT_MAX_GRID_POINTS, MAX_TRIALS
from assay.config._load import overrides_applied
from assay.config._storage import CheckpointStorageConfig
from assay.config._yaml import parse_yaml
from assay.errors import ErrorDetail, InvalidConfig

_WHAT = "master config"


def _command_input(value: Any) -> Any:
    # Checked here so that a wrong type gets one message rather than one per union member.
    if isinstance(value, str) and value.strip():
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return value
    raise config_error(
        f"must be a command string or a non-empty list of strings, got {show(value)}"
    )


Command = Annotated[str | list[str], BeforeValidator(_command_input)]
Seconds = Annotated[float, Field(ge=0)]


class SchedulerConfig(ConfigModel):
    """How a pool orders its queue and fits jobs onto agents."""

    type: Literal["priority", "fair_share"] = "priority"
    preemption: bool = True
    fitting_policy: Literal["best", "worst"] = "best"
    default_priority: Annotated[int, Field(ge=1, le=99)] = 42


class ProviderConfig(ConfigModel):
    """Starts and stops agents on demand by running commands (a cloud CLI, a script).

    ``launch_command`` starts one instance whose agent must take ``$ASSAY_INSTANCE_ID`` as its
    id (``assay agent --id "$ASSAY_INSTANCE_ID" --pool "$ASSAY_POOL" --master "$ASSAY_MASTER"``);
    ``terminate_command`` stops the instance named by ``$ASSAY_INSTANCE_ID``. A list is run as
    is; a string is run by ``/bin/sh -c``. Both also see ``ASSAY_POOL``, ``ASSAY_MASTER``,
    ``ASSAY_AGENT_TOKEN`` (for the agent to join with) and ``ASSAY_SLOTS``
    (``slots_per_instance``).
    """

    type: Literal["command"]
    launch_command: Command
    terminate_command: Command
    min_instances: Annotated[int, Field(ge=0)] = 0
    max_instances: Annotated[int, Field(ge=0)] = 1
    idle_timeout: Seconds = 300
    startup_timeout: Seconds = 600
    slots_per_instance: Annotated[int, Field(ge=1)] = 1

    @classmethod
    def _cross_checks(cls, data: dict[str, Any]) -> list[Problem]:
        low, high = data.get("min_instances", 0), data.get("max_instances", 1)
        if _is_int(low) and _is_int(high) and low > high:
            return [(("max_instances",), f"must be >= min_instances ({low}), got {high}")]
        return []


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class SlurmPoolConfig(ConfigModel):
    """A pool whose allocations are Slurm jobs (``type: slurm``).

    The master submits with ``sbatch`` and reads ``squeue``, so it runs where those commands
    reach the cluster. ``work_dir`` must be on a filesystem the master and the nodes share (a
    job's start, output and exit status pass through it), and ``python`` must be a Python with
    assay installed on every node."""

    partition: str | None = None
    qos: str | None = None
    account: str | None = None
    slot_type: Literal["cuda", "cpu"] | None = None
    """What a slot is: a GPU (``--gres=gpu:N``) or a CPU (``--cpus-per-task=N``). None: GPUs
    where the partition's nodes have them, else CPUs."""
    slots_per_node: Annotated[int, Field(ge=1)] | None = None
    """Slots each node offers; None: its GPUs (or CPUs) as ``sinfo`` reports them."""
    work_dir: Annotated[Path, Field(strict=False)] | None = None
    """Default: ``ASSAY_HOME/slurm/POOL``."""
    master_url: str | None = None
    """Where jobs reach the master; default: the address the master serves on."""
    python: str | None = None
    """The Python jobs run the harness with; default: the master's own."""
    sbatch_args: list[str] = []
    """Further ``sbatch`` options for every job (an experiment adds its own in
    ``slurm.sbatch_args``)."""
    poll_interval: Annotated[float, Field(gt=0)] = 1.0
    """Seconds between looks at the jobs' output and ``squeue``."""
    kill_grace: Seconds = 10.0
    """Seconds between SIGTERM and SIGKILL when an allocation is killed."""


class KubernetesPoolConfig(ConfigModel):
    """A pool whose allocations are pods (``type: kubernetes``), made through the official
    client with the master's kubeconfig, or its service account when it runs in the cluster.

    Every node of the cluster that ``node_selector`` matches is one node of the pool; its slots
    are its allocatable GPUs (``slot_type: cuda``) or CPU cores (``cpu``). See
    ``docs/kubernetes.md``."""

    namespace: str = "default"
    kubeconfig: Annotated[Path, Field(strict=False)] | None = None
    """None: ``$KUBECONFIG`` or ``~/.kube/config``, else the in-cluster service account."""
    context: str | None = None
    slot_type: Literal["cuda", "cpu"] = "cuda"
    """What a slot is: a GPU (``nvidia.com/gpu``) or a CPU core (``cpu``)."""
    node_selector: dict[str, str] = {}
    """Node labels that pick the pool's nodes (every node: ``{}``); also every pod's
    ``nodeSelector``."""
    default_image: str | None = None
    """The image of a trial or task that names none; it needs Python 3.11 or later and assay
    installed (the harness runs in it). None: work must name ``environment.image``."""
    master_url: str | None = None
    """Where pods reach the master (its Service); default: the address it serves on."""
    service_account: str | None = None
    image_pull_secrets: list[str] = []
    token_secret: str = "assay-agent-token"
    """The Secret whose ``token`` key holds the agent token the pods' harness presents; empty:
    pods get no token (only for allocations that never call the master)."""
    checkpoint_claim: str | None = None
    """A PersistentVolumeClaim mounted at shared_fs checkpoint storage's ``host_path``."""
    pod_spec: dict[str, Any] = {}
    """A pod manifest merged under every pod (Determined's ``task_container_defaults``)."""
    poll_interval: Annotated[float, Field(gt=0)] = 2.0
    kill_grace: Seconds = 30.0


ResourceManagerType = Literal["agents", "slurm", "kubernetes"]


class ResourcePoolConfig(ConfigModel):
    """A named set of nodes with its own scheduler: assay's agents (the default), a Slurm
    partition or a Kubernetes namespace (``type``)."""

    pool_name: Annotated[str, Field(min_length=1)]
    description: str = ""
    type: ResourceManagerType = "agents"
    scheduler: SchedulerConfig = SchedulerConfig()
    preemption_timeout: Annotated[int, Field(ge=0)] = 3600
    max_slots: Annotated[int, Field(ge=0)] | None = None
    provider: ProviderConfig | None = None
    slurm: SlurmPoolConfig | None = None
    kubernetes: KubernetesPoolConfig | None = None

    @classmethod
    def _cross_checks(cls, data: dict[str, Any]) -> list[Problem]:
        kind = data.get("type", "agents")
        problems: list[Problem] = []
        for key, only in (("provider", "agents"), ("slurm", "slurm"), ("kubernetes", "kubernetes")):
            if (
                data.get(key) is not None
                and kind != only
                and kind in ("agents", "slurm", "kubernetes")
            ):
                problems.append(
                    ((key,), f"applies to a pool of type: {only}; this pool's type is {kind}")
                )
        return problems


class TlsConfig(ConfigModel):
    """The master's certificate and private key (PEM files); the master serves https."""

    cert: Annotated[Path, Field(strict=False)]
    key: Annotated[Path, Field(strict=False)]


def _host_name(value: str) -> str:
    # The Host check compares names without their port, IPv6 literals in brackets, in lower
    # case: entries are put in that form so that what is written is what is matched.
    name = value.strip().lower()
    if name == "*":
        return name
    if not name or any(c in name for c in "/@ \t"):
        raise config_error(f"must be a host name or address, got {show(value)}")
    bare = name[1:-1] if name.startswith("[") and name.endswith("]") else name
    if ":" in bare:
        try:
            return f"[{ipaddress.IPv6Address(bare)}]"
        except ValueError:
            raise config_error(
                f"must be a host name without a port (e.g. master.example), got {show(value)}"
            ) from None
    if "*" in name[1:] or (name.startswith("*") and not name.startswith("*.")) or name == "*.":
        raise config_error(
            f"a wildcard must be the whole name or lead it (*.example), got {show(value)}"
        )
    return name


def _origin(value: str) -> str:
    # An Origin header is exactly scheme://host[:port]; entries are compared in that form.
    try:
        parts = urllib.parse.urlsplit(value.strip())
        port = parts.port
    except ValueError:
        parts, port = None, None
    if (
        parts is None
        or parts.scheme.lower() not in ("http", "https")
        or not parts.hostname
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
        or parts.username is not None
    ):
        raise config_error(
            f"must be an origin, scheme://host[:port] (e.g. https://ui.example:8443), "
            f"got {show(value)}"
        )
    host = parts.hostname
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme.lower()}://{host}" + (f":{port}" if port is not None else "")


def _endpoint(value: str) -> str:
    # An object store's address as a storage config gives it (an s3 endpoint_url, an azure
    # account_url): only its scheme, host and port say which server is contacted.
    try:
        parts: urllib.parse.SplitResult | None = urllib.parse.urlsplit(value.strip())
        _ = parts.port if parts is not None else None  # a port that is no number is refused
    except ValueError:
        parts = None
    if (
        parts is None
        or parts.scheme.lower() not in ("http", "https")
        or not parts.hostname
        or parts.query
        or parts.fragment
        or parts.username is not None
        or "\\" in value
    ):
        raise config_error(
            "must be an object store's URL, scheme://host[:port] (e.g. "
            f"http://minio.internal:9000), got {show(value)}"
        )
    return value.strip()


HostName = Annotated[str, AfterValidator(_host_name)]
Origin = Annotated[str, AfterValidator(_origin)]
StorageEndpoint = Annotated[str, AfterValidator(_endpoint)]


class ObservabilityConfig(ConfigModel):
    """The master's Prometheus metrics (``GET /metrics``), under Determined's key."""

    enable_prometheus: bool = True
    """Serve ``/metrics`` (to admins, and to whoever presents ``scrape_token``); false: 404."""
    scrape_token: Annotated[str, Field(min_length=16, max_length=256)] | None = None
    """A secret Prometheus presents as ``Authorization: Bearer <token>`` (its scrape config's
    ``authorization.credentials``) to read ``/metrics`` without signing in; none: only signed-in
    admins read it."""


class LimitsConfig(ConfigModel):
    """What one experiment may ask of this master, past the limits every config keeps."""

    max_grid_points: Annotated[int, Field(ge=1, le=MAX_TRIALS)] = DEFAULT_MAX_GRID_POINTS
    """The most points (trials) a grid search may have; a bigger grid is refused at submission,
    before any of it is built."""


def _absolute_directory(value: Path) -> Path:
    # Compared as written after normalising: a root's links are resolved when it is used.
    if not value.is_absolute():
        raise config_error(f"must be an absolute path, got {show(str(value))}")
    return Path(posixpath.normpath(str(value)))


AbsoluteDirectory = Annotated[Path, Field(strict=False), AfterValidator(_absolute_directory)]


class AllowedStorageConfig(ConfigModel):
    """Which checkpoint storage experiments may name. The master reads (downloads) and deletes
    checkpoint files with its own rights, so a storage an experiment names is one the master
    will touch for that experiment's owner."""

    host_paths: list[AbsoluteDirectory] = []
    """Directories an experiment's ``shared_fs`` storage (``host_path`` joined with
    ``storage_path``) or ``directory`` storage (``container_path``) must lie in. Empty: only
    the master's own checkpoint storage (``checkpoint_storage`` here, else
    ``ASSAY_HOME/checkpoints``). The master's home (``ASSAY_HOME``, but for its
    ``checkpoints`` directory) stays out of reach whatever is listed."""


def _default_pools() -> list[ResourcePoolConfig]:
    return [ResourcePoolConfig(pool_name="default")]


class MasterConfig(ConfigModel):
    """The master's settings. ``db`` is an SQLAlchemy URL (None: SQLite under ``assay_home``);
    ``checkpoint_storage`` applies to experiments that name none."""

    host: str = "127.0.0.1"
    port: Annotated[int, Field(ge=0, le=65535)] = 8080
    db: str | None = None
    assay_home: Annotated[Path, Field(strict=False)] | None = None
    checkpoint_storage: CheckpointStorageConfig | None = None
    resource_pools: list[ResourcePoolConfig] = Field(default_factory=_default_pools)
    default_compute_pool: str = "default"
    default_aux_pool: str = "default"
    agent_heartbeat_seconds: Annotated[float, Field(gt=0)] = 5.0
    agent_lost_after_seconds: Annotated[float, Field(gt=0)] = 30.0
    agent_ping_timeout_seconds: Annotated[float, Field(ge=1)] = 60.0
    """How long the master waits for an agent's answer to its ping (sent every 10 s) before it
    closes the agent's connection: how soon a machine that hangs with its connection open is
    noticed (it is then lost after ``agent_lost_after_seconds``). The default is as long as the
    agents wait for the master's. Lower it to notice a hung machine sooner; a master whose
    event loop runs late under a large cluster's load (benchmark B13) needs the margin."""
    read_processes: Annotated[int, Field(ge=0, le=64)] = 0
    """Processes that read the API's busiest pages (experiments, trials, the job queue) beside
    the master's own, each with its own database connections; 0 reads them in the master's
    process. For a master that many people and scripts read: their reads then no longer hold
    up the agents' messages and the ingest of their reports. Each takes about 100 MB and a
    second to start; the database must be PostgreSQL or a SQLite file."""
    rendezvous_port_base: Annotated[int, Field(ge=29500, le=32700)] = 29500
    """The lowest port a distributed trial's ranks meet at, on the node of its rank 0 (29500,
    torch.distributed's default); each live gang takes the next free pair. Two masters whose
    agents share machines need bases apart (by 100 or more), or their gangs may meet at the
    same ports. It stays above job instances' ports (20000-29499) and below Linux's ephemeral
    ports (32768 up)."""
    task_port_base: Annotated[int, Field(ge=20000, le=29000)] = 20000
    """The lowest port a task's instance is given (TensorBoards, notebooks, shells, OpenPAI
    jobs' ports), up to 29499. Two masters whose agents share machines need bases apart by as
    many ports as their tasks hold at once, or their tasks may be given the same ports."""
    agent_token: str | None = None
    """A secret agents must present to join (``assay agent --token`` or ``ASSAY_AGENT_TOKEN``).
    Without one (nor ``ASSAY_AGENT_TOKEN`` for the master), the master makes one on the
    cluster's first start, keeps it in its database and in ``ASSAY_HOME/agent-token``
    (``assay up`` gives its master a token of its own, in ``ASSAY_HOME/run/agent-token``)."""
    # How the master protects itself from browsers and the network (kept together).
    tls: TlsConfig | None = None
    """Serve https with this certificate and key (``--tls-cert``/``--tls-key``)."""
    allowed_hosts: list[HostName] = Field(default_factory=list)
    """Host names requests may be addressed to, beyond the loopback names and the address the
    master binds to (always accepted); ``*.example`` matches subdomains, ``*`` any name. A
    request naming another Host is refused, which closes DNS rebinding."""
    allowed_origins: list[Origin] = Field(default_factory=list)
    """Web origins (``https://ui.example``) besides the master's own whose pages may change
    state: send a state-changing request or open the agents' WebSocket."""
    storage_endpoints: list[StorageEndpoint] = Field(default_factory=list)
    """Object-store endpoints (an s3 ``endpoint_url``, an azure ``account_url`` or a
    connection string's ``BlobEndpoint``), besides the one of this master's own
    ``checkpoint_storage``, that the master itself may contact for an experiment's checkpoint
    storage: to check it at submission, read checkpoints from it and delete them. An endpoint
    is its scheme, host and port (a path is not compared). AWS S3 and Azure's
    ``*.blob.core.windows.net`` need no entry; an experiment naming any other endpoint is checked
    by its trials, and the master does not contact it."""
    limits: LimitsConfig = LimitsConfig()
    observability: ObservabilityConfig = ObservabilityConfig()
    allowed_checkpoint_storage: AllowedStorageConfig = AllowedStorageConfig()
    """Which checkpoint storage experiments may name (see :class:`AllowedStorageConfig`)."""
    moved_checkpoint_storage: dict[AbsoluteDirectory, AbsoluteDirectory] = {}
    """Checkpoint directories that moved, old path to new (after a restore into another home or
    onto another machine): at each start, every experiment's and job's ``shared_fs`` storage
    at an old path, or under it, is set to the new one, where its checkpoints are now. An entry
    applied once changes nothing more, and may stay."""

    @classmethod
    def _cross_checks(cls, data: dict[str, Any]) -> list[Problem]:
        pools = data.get("resource_pools")
        names: list[Any]
        if pools is None:
            names = ["default"]
        elif isinstance(pools, list):
            names = [p.get("pool_name") if isinstance(p, dict) else None for p in pools]
        else:
            return []
        problems: list[Problem] = []
        first: dict[str, int] = {}
        for i, name in enumerate(names):
            if not isinstance(name, str):
                continue
            if name in first:
                problems.append(
                    (
                        ("resource_pools", i, "pool_name"),
                        f"duplicate pool name {name!r} (also resource_pools[{first[name]}]); "
                        "pool names must be unique",
                    )
                )
            else:
                first[name] = i
        known = ", ".join(first) or "none"
        # With a pool whose name is itself wrong, whether a default names it is unknowable.
        unnamed = any(not isinstance(name, str) for name in names)
        for key in () if unnamed else ("default_compute_pool", "default_aux_pool"):
            chosen = data.get(key, "default")
            if isinstance(chosen, str) and chosen not in first:
                problems.append(
                    (
                        (key,),
                        f"names no resource pool: got {show(chosen)}, pools are: {known} "
                        f"(set {key} to one of them)",
                    )
                )
        heartbeat = data.get("agent_heartbeat_seconds", 5.0)
        lost = data.get("agent_lost_after_seconds", 30.0)
        if _is_number(heartbeat) and _is_number(lost) and lost <= heartbeat:
            problems.append(
                (
                    ("agent_lost_after_seconds",),
                    f"must be > agent_heartbeat_seconds ({heartbeat}), got {lost}",
                )
            )
        return problems

    def pool(self, name: str) -> ResourcePoolConfig | None:
        """The pool called ``name``, if there is one."""
        return next((p for p in self.resource_pools if p.pool_name == name), None)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def load_master_config(path: Path | None, *, overrides: Sequence[str] = ()) -> MasterConfig:
    """The master's settings from the YAML file at ``path`` (defaults when None), with
    ``key.path=value`` overrides applied. Raises :class:`InvalidConfig` listing every problem."""
    raw: Any = {}
    if path is not None:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise InvalidConfig(
                f"cannot read the master config {path}: {exc.strerror or exc}"
            ) from None
        raw = parse_yaml(text, str(path))
        if raw is None:
            raw = {}
    if not isinstance(raw, dict):
        detail = ErrorDetail("", f"must be a map of keys to values, got {show(raw)}")
        raise invalid(_WHAT, [detail])
    problems: list[ErrorDetail] = []
    if overrides:
        raw, problems = overrides_applied(raw, overrides)
    try:
        config: MasterConfig = validate_as(MasterConfig, raw, what=_WHAT)
    except InvalidConfig as exc:
        raise invalid(_WHAT, problems + exc.details) from None
    if problems:
        raise invalid(_WHAT, problems)
    return config
