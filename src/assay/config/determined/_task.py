"""Determined's command configs (``det cmd run --config-file``) and generic-task configs
(``det task create``) read into a :class:`JobSpec`: one task role of one instance that runs
the entrypoint in the uploaded context directory.

An entrypoint list runs as Determined runs it: one item is a shell command line (``sh -c``),
several are the program and its arguments (quoted with :func:`shlex.join`, so a shell builtin
such as ``exit 1`` still works). Keys assay cannot honour are refused naming the key; keys that
configure only the container or a notebook are accepted with a note.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from typing import Annotated, Any, ClassVar

from pydantic import Field

from assay.config._base import ConfigModel, OpenSection, Problem, show
from assay.config._environment import BindMount, EnvironmentConfig, EnvironmentVariable
from assay.config._errors import invalid
from assay.config._experiment import Entrypoint
from assay.config._jobload import validated
from assay.config._jobspec import (
    REGISTRY_AUTH_SECRET,
    ContainerOptions,
    JobSpec,
    JobSpecKind,
    MountSpec,
    TaskRoleSpec,
)
from assay.config._limits import DB_INT_MAX, MAX_DESCRIPTION, MAX_NAME, MAX_SLOTS_PER_TRIAL
from assay.config._load import overrides_applied
from assay.config._resources import Device, MemorySize
from assay.config._yaml import parse_yaml
from assay.errors import ErrorDetail

Name = Annotated[str, Field(max_length=MAX_NAME)]
_ROLE_NAMES = {JobSpecKind.COMMAND: "command", JobSpecKind.GENERIC: "task"}
_FORMATS = {JobSpecKind.COMMAND: "determined-command", JobSpecKind.GENERIC: "determined-task"}
_WHAT = {JobSpecKind.COMMAND: "command config", JobSpecKind.GENERIC: "task config"}
_SHOWN_NAME = 80


class TaskResources(ConfigModel):
    """A command's ``resources``: Determined's ``slots`` rather than ``slots_per_trial``."""

    slots: Annotated[int, Field(ge=0, le=MAX_SLOTS_PER_TRIAL)] = 1
    max_slots: Annotated[int, Field(ge=0, le=DB_INT_MAX)] | None = None
    weight: Annotated[float, Field(gt=0)] = 1.0
    priority: Annotated[int, Field(ge=1, le=99)] | None = None
    resource_pool: Name = ""
    shm_size: MemorySize | None = None
    agent_label: Name | None = None
    is_single_node: bool | None = None
    devices: list[Device] = []
    native_parallel: bool = False
    # An experiment's key, refused with a pointer to the command's own.
    slots_per_trial: Any = None

    @classmethod
    def _cross_checks(cls, data: dict[str, Any]) -> list[Problem]:
        problems: list[Problem] = []
        if "slots_per_trial" in data:
            problems.append(
                (
                    ("slots_per_trial",),
                    "is an experiment's key; a command or task asks for resources.slots",
                )
            )
        slots, most = data.get("slots", 1), data.get("max_slots")
        if isinstance(slots, int) and isinstance(most, int) and most < slots:
            problems.append(
                (
                    ("max_slots",),
                    f"must be >= slots ({slots}), got {most}: the command could never start",
                )
            )
        return problems


class TaskConfig(ConfigModel):
    """A Determined command or generic-task config."""

    description: Annotated[str, Field(max_length=MAX_DESCRIPTION)] | None = None
    entrypoint: Entrypoint
    environment: EnvironmentConfig = EnvironmentConfig()
    resources: TaskResources = TaskResources()
    bind_mounts: list[BindMount] = []
    work_dir: Annotated[str, Field(min_length=1, max_length=4096)] | None = None
    debug: bool = False
    # For notebooks and TensorBoards; a command ignores them, as in Determined.
    tensorboard_args: list[str] = []
    idle_timeout: str | int | None = None
    notebook_idle_type: str | None = None
    pbs: OpenSection | None = None
    slurm: OpenSection | None = None

    @classmethod
    def _cross_checks(cls, data: dict[str, Any]) -> list[Problem]:
        problems: list[Problem] = []
        mounts = data.get("bind_mounts")
        for i, mount in enumerate(mounts if isinstance(mounts, list) else []):
            if not isinstance(mount, dict):
                continue
            host, inside = mount.get("host_path"), mount.get("container_path")
            if isinstance(host, str) and isinstance(inside, str) and host != inside:
                problems.append(
                    (
                        ("bind_mounts", i, "container_path"),
                        f"nothing is mounted at {inside}: assay runs the command on the agent's "
                        f"host, where it reads {host} itself; use that path in the command and "
                        "set container_path to it (or remove the mount)",
                    )
                )
        return problems


PYTHON_VAR = "ASSAY_PYTHON"


def find_python(needs: str) -> str:
    """A shell line setting ``$ASSAY_PYTHON`` to the instance's ``python`` (else ``python3``), or
    ending it with one line naming what is missing and what it ``needs``."""
    return (
        f'{PYTHON_VAR}=$(command -v python || command -v python3) || {{ echo "assay: no python '
        f'on the PATH of agent $ASSAY_AGENT_ID (or in its image); {needs}" >&2; exit 1; }}'
    )


class ServedConfig(TaskConfig):
    """A config of a task assay starts a server for (a notebook, a shell): a command config
    whose entrypoint assay writes, so one given is refused saying what runs instead."""

    entrypoint: Entrypoint | None = None  # type: ignore[assignment]
    runs: ClassVar[str] = ""
    """What the task runs instead of an entrypoint, as the refusal of one says it."""

    @classmethod
    def _cross_checks(cls, data: dict[str, Any]) -> list[Problem]:
        problems = super()._cross_checks(data)
        if "entrypoint" in data:
            problems.append((("entrypoint",), f"{cls.runs}; remove it"))
        return problems


def entrypoint_command(entrypoint: str | Sequence[str]) -> str:
    """The shell command line of an entrypoint: a string as is; one item as a command line (as
    Determined runs it with ``sh -c``); several items quoted as the program and its arguments."""
    if isinstance(entrypoint, str):
        return entrypoint
    if len(entrypoint) == 1:
        return entrypoint[0]
    return shlex.join(entrypoint)


def load_task_config(
    raw_or_text: Any,
    *,
    kind: JobSpecKind,
    filename: str = "",
    overrides: Sequence[str] = (),
    problems: Sequence[ErrorDetail] = (),
) -> JobSpec:
    """The spec of a Determined command (``kind`` COMMAND) or generic task (GENERIC) config,
    given as parsed data or as YAML text, with ``key.path=value`` overrides applied;
    ``problems`` are found by the caller (reported first).

    Raises :class:`~assay.errors.InvalidConfig` listing every problem.
    """
    if kind not in _ROLE_NAMES:
        raise ValueError(f"a task config makes a command or a generic task, not a {kind.value}")
    raw, found = read_config(raw_or_text, _WHAT[kind], filename=filename, overrides=overrides)
    cfg = validated(TaskConfig, raw, _WHAT[kind], found + list(problems))
    return _spec(cfg, kind)


def read_config(
    raw_or_text: Any,
    what: str,
    *,
    filename: str = "",
    overrides: Sequence[str] = (),
    empty: Any = None,
) -> tuple[Any, list[ErrorDetail]]:
    """A task config as data (YAML text parsed; ``empty`` for blank text) with ``key.path=value``
    overrides applied, and the overrides' problems."""
    raw = raw_or_text
    if isinstance(raw, str | bytes):
        raw = parse_yaml(raw, filename or f"<{what}>") if raw.strip() or empty is None else empty
    if raw is None and empty is not None:
        raw = empty
    if not overrides:
        return raw, []
    if not isinstance(raw, dict):
        raise invalid(what, [ErrorDetail("", f"must be a map, got {show(raw)}")])
    return overrides_applied(raw, overrides)


def command_spec(
    argv: Sequence[str], overrides: Sequence[str] = (), *, config: Any = None
) -> JobSpec:
    """The spec of ``assay cmd run [--config-file F] [--config k=v ...] -- ARGV...``: ``argv``
    replaces the entrypoint of ``config`` (a parsed command config, or None)."""
    raw: Any = {} if config is None else config
    if isinstance(raw, dict) and argv:
        raw = {**raw, "entrypoint": list(argv)}
    problems: list[ErrorDetail] = []
    if isinstance(raw, dict) and raw.get("entrypoint") is None:
        problems.append(
            ErrorDetail(
                "entrypoint", "required: give the command to run after -- (assay cmd run -- CMD)"
            )
        )
    return load_task_config(raw, kind=JobSpecKind.COMMAND, overrides=overrides, problems=problems)


def _spec(cfg: TaskConfig, kind: JobSpecKind) -> JobSpec:
    command = entrypoint_command(cfg.entrypoint)
    return task_spec(cfg, kind, [command], name=cfg.description or command)


def task_spec(
    cfg: TaskConfig,
    kind: JobSpecKind,
    commands: list[str],
    *,
    name: str,
    role_name: str | None = None,
    ports: dict[str, int] | None = None,
    source_format: str | None = None,
) -> JobSpec:
    """The spec of one instance running ``commands`` (one shell) as ``cfg`` says: its slots,
    pool, priority, environment and mounts (what commands, tasks and notebooks share)."""
    resources = cfg.resources
    device = "cuda" if resources.slots > 0 else "cpu"
    commands = list(commands)
    if cfg.work_dir is not None:
        # Determined starts the command in work_dir; one shell runs the commands in order.
        commands.insert(0, f"cd {shlex.quote(cfg.work_dir)}")
    image = cfg.environment.image_for(device)
    env = cfg.environment.variables(device)
    entries = getattr(cfg.environment.environment_variables, device)
    secret = sorted(
        {e.name for e in entries if isinstance(e, EnvironmentVariable) and e.secret} & set(env)
    )
    role = TaskRoleSpec(
        name=role_name or _ROLE_NAMES[kind],
        instances=1,
        commands=commands,
        slots=resources.slots,
        image=image,
        ports=ports or {},
    )
    if len(name) > _SHOWN_NAME:
        name = name[: _SHOWN_NAME - 3] + "..."
    auth = cfg.environment.registry_auth
    return JobSpec(
        kind=kind,
        name=name,
        source_format=source_format or _FORMATS[kind],
        roles=[role],
        image=image,
        env=env,
        secret_env=secret,
        secrets={REGISTRY_AUTH_SECRET: json.dumps(auth.model_dump())} if auth else {},
        container_options=ContainerOptions(
            force_pull=cfg.environment.force_pull_image,
            shm_size=resources.shm_size or 0,
            mounts=[MountSpec.model_validate(m.model_dump()) for m in cfg.bind_mounts],
        ),
        pool=resources.resource_pool,
        priority=resources.priority,
        weight=resources.weight,
        agent_label=resources.agent_label,
        description=cfg.description or "",
        context_required=True,
        notes=_notes(cfg, image, kind),
    )


_NOT_FOR_COMMANDS = ("tensorboard_args", "idle_timeout", "notebook_idle_type")

CONTAINER_ONLY = "applied only in a container (an agent of the pool with a container runtime)"
"""Ends the note of a setting that applies to a command in a container; the master drops
these notes when the command does run in one."""


def _notes(cfg: TaskConfig, image: str | None, kind: JobSpecKind) -> list[str]:
    notes: list[str] = []
    if image is not None:
        notes.append(
            f"environment.image ({image}): recorded as the command's image; an agent without "
            "a container runtime runs the command on its host, with the software installed there"
        )
    env = cfg.environment
    for key, given in (
        ("force_pull_image", env.force_pull_image),
        ("registry_auth", env.registry_auth is not None),
    ):
        if given:
            notes.append(f"environment.{key}: {CONTAINER_ONLY}")
    container_only: dict[str, object] = {
        "pod_spec": env.pod_spec,
        "ports": env.ports,
        "proxy_ports": env.proxy_ports,
        "add_capabilities": env.add_capabilities,
        "drop_capabilities": env.drop_capabilities,
    }
    for key, value in container_only.items():
        if value:
            notes.append(f"environment.{key}: a container setting; not applied")
    resources = cfg.resources
    if resources.shm_size is not None:
        notes.append(f"resources.shm_size: {CONTAINER_ONLY}; else the host's /dev/shm is used")
    if resources.devices:
        notes.append("resources.devices: not applied; the command sees its host's devices")
    if resources.native_parallel:
        notes.append("resources.native_parallel: not used (Determined deprecated it)")
    for i, mount in enumerate(cfg.bind_mounts):
        notes.append(
            f"bind_mounts[{i}]: {CONTAINER_ONLY}; else the command reads {mount.host_path} "
            "on its host" + (" (read_only is not enforced)" if mount.read_only else "")
        )
    if cfg.debug:
        notes.append("debug: no extra logging is produced for commands")
    notebook = kind == JobSpecKind.NOTEBOOK
    ignored = ("tensorboard_args",) if notebook else _NOT_FOR_COMMANDS
    for key in ignored:
        if getattr(cfg, key):
            what = (
                "TensorBoards; a notebook" if notebook else "notebooks and TensorBoards; a command"
            )
            notes.append(f"{key}: applies to {what} ignores it")
    for key in ("pbs", "slurm"):
        section = getattr(cfg, key)
        if section is not None and section.model_dump():
            notes.append(f"{key}: settings for Determined's {key.upper()} launcher; not applied")
    return notes
