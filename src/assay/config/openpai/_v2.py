"""OpenPAI's job protocol v2 (YAML, ``protocolVersion: 2``) read into a :class:`JobSpec`.

The models check each section; :meth:`OpenPaiJobV2._cross_checks` checks what spans sections (the
prerequisites task roles name, deployments, every template of every command, ``extras``), so
that one refusal lists every problem. What is accepted but not acted on as written is said in
the spec's ``notes`` (see ``docs/openpai.md``).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field

from assay.config._base import ConfigModel, Loc, Problem, config_error, show
from assay.config._jobspec import JobSpec, JobSpecKind, Prerequisite, TaskRoleSpec
from assay.config._limits import DB_INT_MAX, MAX_DESCRIPTION, MAX_NAME, MAX_SLOTS_PER_TRIAL
from assay.config.openpai._extras import extras_findings, more_successes_than_instances
from assay.config.openpai._templates import ROLE_SCOPED, Scope, template_problems

ROLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ROLE_NAME_RULE = (
    "must match ^[A-Za-z_][A-Za-z0-9_]*$ (a letter or _, then letters, digits or _: it becomes "
    "part of variable names such as PAI_HOST_IP_<role>_0)"
)
PORT_LABEL_RULE = (
    "must match ^[A-Za-z_][A-Za-z0-9_]*$ (a letter or _, then letters, digits or _: it becomes "
    "part of variable names such as PAI_PORT_LIST_<role>_0_<label>)"
)
_JOB_NAME = re.compile(r"[a-zA-Z0-9_-]+")
MAX_INSTANCES = 10_000
"""The most instances one task role may have."""
MAX_PORTS = 1_000
"""The most ports one instance may reserve under one label."""
PREREQUISITE_TYPES = ("data", "script", "dockerimage", "output")
Count = Annotated[int, Field(ge=0, le=DB_INT_MAX)]
Version = str | int | float


def _job_name(value: str) -> str:
    if _JOB_NAME.fullmatch(value) is None:
        raise config_error(
            f"must match ^[a-zA-Z0-9_-]+$ (letters, digits, _ and -), got {show(value)}"
        )
    return value


def _protocol_version(value: int | str) -> int | str:
    if value not in (2, "2"):
        raise config_error(f"must be 2 (OpenPAI's job protocol v2), got {show(value)}")
    return value


def min_count(value: int) -> int:
    """-1 or a count >= 1, as OpenPAI's completion policies are."""
    if value == -1 or value >= 1:
        return value
    raise config_error(f"must be -1 or >= 1, got {value}")


MinCount = Annotated[int, Field(le=DB_INT_MAX), AfterValidator(min_count)]


class PaiModel(ConfigModel):
    """A section of an OpenPAI job: keys are written as OpenPAI spells them (``memoryMB``)."""

    model_config = ConfigDict(populate_by_name=False)


class _Auth(PaiModel):
    username: str | None = None
    password: str | None = None
    registryuri: str | None = None


class _Prerequisite(PaiModel):
    protocol_version: int | str | None = Field(None, alias="protocolVersion")
    name: Annotated[str, Field(min_length=1, max_length=MAX_NAME)]
    type: Literal["data", "script", "dockerimage", "output"]
    version: Version | None = None
    contributor: str | None = None
    description: str | None = None
    auth: _Auth | None = None
    uri: str | list[str]

    @classmethod
    def _cross_checks(cls, data: dict[str, Any]) -> list[Problem]:
        problems: list[Problem] = []
        kind = data.get("type")
        if isinstance(data.get("uri"), list) and kind in PREREQUISITE_TYPES and kind != "data":
            problems.append((("uri",), "must be a string: only a data prerequisite lists uris"))
        if "auth" in data and kind in PREREQUISITE_TYPES and kind != "dockerimage":
            problems.append((("auth",), "only a dockerimage prerequisite may have auth"))
        return problems


class _Completion(PaiModel):
    min_failed: MinCount = Field(1, alias="minFailedInstances")
    min_succeeded: MinCount | None = Field(None, alias="minSucceededInstances")


class _Resources(PaiModel):
    cpu: Annotated[int | float, Field(ge=0, le=DB_INT_MAX)]
    memory_mb: Annotated[int, Field(ge=0, le=DB_INT_MAX)] = Field(alias="memoryMB")
    gpu: Annotated[int, Field(ge=0, le=MAX_SLOTS_PER_TRIAL)]
    ports: dict[str, Annotated[int, Field(ge=1, le=MAX_PORTS)]] = {}

    @classmethod
    def _cross_checks(cls, data: dict[str, Any]) -> list[Problem]:
        ports = data.get("ports")
        if not isinstance(ports, dict):
            return []
        return [
            (("ports", label), f"port labels {PORT_LABEL_RULE}")
            for label in ports
            if isinstance(label, str) and not ROLE_NAME.fullmatch(label)
        ]


class _ContainerOptions(PaiModel):
    shm_mb: Annotated[int, Field(ge=0, le=DB_INT_MAX)] | None = Field(None, alias="shmMB")
    infiniband: bool | None = None


class _Role(PaiModel):
    instances: Annotated[int, Field(ge=1, le=MAX_INSTANCES)] = 1
    completion: _Completion = _Completion()
    task_retry_count: Count = Field(0, alias="taskRetryCount")
    docker_image: str = Field(alias="dockerImage")
    data: str | None = None
    output: str | None = None
    script: str | None = None
    extra_container_options: _ContainerOptions | None = Field(None, alias="extraContainerOptions")
    resources: _Resources = Field(alias="resourcePerInstance")
    commands: Annotated[list[str], Field(min_length=1)]


class _DeploymentRole(PaiModel):
    pre_commands: list[str] = Field([], alias="preCommands")
    post_commands: list[str] = Field([], alias="postCommands")


class _Deployment(PaiModel):
    name: str
    version: Version | None = None
    task_roles: dict[str, _DeploymentRole] = Field({}, alias="taskRoles")


class _Defaults(PaiModel):
    virtual_cluster: Annotated[str, Field(max_length=MAX_NAME)] | None = Field(
        None, alias="virtualCluster"
    )
    deployment: str | None = None


class OpenPaiJobV2(PaiModel):
    protocol_version: Annotated[int | str, AfterValidator(_protocol_version)] = Field(
        alias="protocolVersion"
    )
    name: Annotated[str, Field(max_length=MAX_NAME), AfterValidator(_job_name)]
    type: Literal["job"]
    version: Version | None = None
    contributor: str | None = None
    description: Annotated[str, Field(max_length=MAX_DESCRIPTION)] | None = None
    prerequisites: list[_Prerequisite] = []
    parameters: dict[str, Any] = {}
    secrets: dict[str, str | int | float | bool] = {}
    job_retry_count: Count = Field(0, alias="jobRetryCount")
    task_roles: Annotated[dict[str, _Role], Field(min_length=1)] = Field(alias="taskRoles")
    deployments: list[_Deployment] = []
    defaults: _Defaults = _Defaults()
    extras: dict[str, Any] = {}

    @classmethod
    def _cross_checks(cls, data: dict[str, Any]) -> list[Problem]:
        roles = _dict(data.get("taskRoles"))
        prerequisites = _prerequisites(data.get("prerequisites"))
        problems: list[Problem] = [
            (("taskRoles", name), f"task role names {ROLE_NAME_RULE}")
            for name in roles
            if isinstance(name, str) and not ROLE_NAME.fullmatch(name)
        ]
        problems += _duplicates(data.get("prerequisites"), "prerequisites", "prerequisite")
        scopes: dict[str, Scope] = {}
        for name, written in roles.items():
            role = _dict(written)
            problems += _references(name, role, prerequisites)
            scopes[name] = _scope(data, name, role, prerequisites)
            for i, command in enumerate(_list(role.get("commands"))):
                problems += _templates(("taskRoles", name, "commands", i), command, scopes[name])
        problems += _deployment_problems(data, roles, scopes)
        plain = _scope(data, None, {}, prerequisites)
        for i, item in enumerate(_list(data.get("prerequisites"))):
            for key, value in _dict(_dict(item).get("auth")).items():
                problems += _templates(("prerequisites", i, "auth", key), value, plain)
        problems += extras_findings(data.get("extras"))[0]
        return problems


def _dict(value: Any) -> dict[Any, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _prerequisites(raw: Any) -> dict[str, dict[str, Any]]:
    """The prerequisites by name (the first of a name), as written."""
    out: dict[str, dict[str, Any]] = {}
    for item in _list(raw):
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            out.setdefault(item["name"], item)
    return out


def _duplicates(items: Any, key: str, what: str) -> list[Problem]:
    seen: set[str] = set()
    problems: list[Problem] = []
    for i, item in enumerate(_list(items)):
        name = _dict(item).get("name")
        if isinstance(name, str):
            if name in seen:
                problems.append(((key, i, "name"), f"another {what} is named {show(name)}"))
            seen.add(name)
    return problems


def _references(role_name: str, role: dict[str, Any], by_name: dict[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    for key, kind in (("dockerImage", "dockerimage"), *((k, k) for k in ROLE_SCOPED)):
        named = role.get(key)
        if not isinstance(named, str):
            continue
        found = by_name.get(named)
        if found is not None and found.get("type") == kind:
            continue
        candidates = [n for n, p in by_name.items() if p.get("type") == kind]
        has = (
            f"the {kind} prerequisites are: {', '.join(candidates)}"
            if candidates
            else (f"there is no {kind} prerequisite")
        )
        if found is None:
            message = f"names no prerequisite ({show(named)}); {has}"
        else:
            message = (
                f"must name a {kind} prerequisite, but {named} is {show(found.get('type'))}; {has}"
            )
        problems.append((("taskRoles", role_name, key), message))
    return problems


def _scope(
    data: dict[str, Any], role_name: str | None, role: dict[str, Any], by_name: dict[str, Any]
) -> Scope:
    chosen: dict[str, dict[str, Any] | None] = {}
    for root in ROLE_SCOPED:
        named = role.get(root)
        if named is None:
            chosen[root] = None
        elif isinstance(named, str) and _dict(by_name.get(named)).get("type") == root:
            chosen[root] = by_name[named]
        # else: the reference itself is reported; its templates are not checked
    return Scope(_dict(data.get("parameters")), _dict(data.get("secrets")), chosen, role_name)


def _templates(loc: Loc, text: Any, scope: Scope) -> list[Problem]:
    if not isinstance(text, str):
        return []
    return [(loc, message) for message in template_problems(text, scope)]


def _deployment_problems(
    data: dict[str, Any], roles: dict[Any, Any], scopes: dict[str, Scope]
) -> list[Problem]:
    problems = _duplicates(data.get("deployments"), "deployments", "deployment")
    names: list[str] = []
    for i, written in enumerate(_list(data.get("deployments"))):
        deployment = _dict(written)
        if isinstance(deployment.get("name"), str):
            names.append(deployment["name"])
        for role_name, commands in _dict(deployment.get("taskRoles")).items():
            loc: Loc = ("deployments", i, "taskRoles", role_name)
            if role_name not in roles:
                has = ", ".join(map(str, roles)) or "none"
                problems.append((loc, f"names no task role; the task roles are: {has}"))
                continue
            for key in ("preCommands", "postCommands"):
                for j, command in enumerate(_list(_dict(commands).get(key))):
                    problems += _templates((*loc, key, j), command, scopes[role_name])
    chosen = _dict(data.get("defaults")).get("deployment")
    if isinstance(chosen, str) and chosen not in names:
        has = f"the deployments are: {', '.join(names)}" if names else "there are no deployments"
        problems.append((("defaults", "deployment"), f"names no deployment; {has}"))
    return problems


def _secret_text(value: str | int | float | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def build_v2(job: OpenPaiJobV2) -> JobSpec:
    """The spec of a validated v2 job."""
    images = {p.name: p.uri for p in job.prerequisites if p.type == "dockerimage"}
    deployment = next(
        (d for d in job.deployments if d.name == job.defaults.deployment and d.name), None
    )
    roles: list[TaskRoleSpec] = []
    for name, role in job.task_roles.items():
        extra = deployment.task_roles.get(name) if deployment else None
        commands = [
            *(extra.pre_commands if extra else []),
            *role.commands,
            *(extra.post_commands if extra else []),
        ]
        image = images[role.docker_image]
        roles.append(
            TaskRoleSpec(
                name=name,
                instances=role.instances,
                commands=commands,
                slots=role.resources.gpu,
                cpu=float(role.resources.cpu),
                memory_mb=role.resources.memory_mb,
                ports=dict(role.resources.ports),
                min_failed_instances=role.completion.min_failed,
                min_succeeded_instances=role.completion.min_succeeded,
                task_retry_count=role.task_retry_count,
                image=image if isinstance(image, str) else None,
                data=role.data,
                output=role.output,
                script=role.script,
            )
        )
    return JobSpec(
        kind=JobSpecKind.JOB,
        name=job.name,
        source_format="openpai-v2",
        roles=roles,
        job_retry_count=job.job_retry_count,
        parameters=dict(job.parameters),
        secrets={k: _secret_text(v) for k, v in job.secrets.items()},
        prerequisites=[_prerequisite(p) for p in job.prerequisites],
        pool=job.defaults.virtual_cluster or "",
        description=job.description or "",
        notes=_notes(job),
    )


def _prerequisite(p: _Prerequisite) -> Prerequisite:
    fields = p.model_dump(by_alias=True, exclude_none=True, exclude={"name", "type", "uri"})
    return Prerequisite(name=p.name, type=p.type, uri=p.uri, fields=fields)


def _notes(job: OpenPaiJobV2) -> list[str]:
    notes: list[str] = []
    images = {p.name: p.uri for p in job.prerequisites}
    for i, p in enumerate(job.prerequisites):
        if p.auth is not None:
            notes.append(
                f"prerequisites[{i}].auth: registry credentials are not used; an agent that runs "
                "containers pulls the image without them"
            )
    used = sorted({str(images[role.docker_image]) for role in job.task_roles.values()})
    notes.append(
        f"taskRoles.*.dockerImage ({', '.join(used)}): recorded as the image of the instances; "
        "an agent without a container runtime runs the commands on its host, with the software "
        "installed there"
    )
    for name, role in job.task_roles.items():
        at = f"taskRoles.{name}"
        wanted = role.completion.min_succeeded
        if wanted is not None and wanted > role.instances:
            notes.append(
                more_successes_than_instances(
                    f"{at}.completion.minSucceededInstances", wanted, role.instances
                )
            )
        options = role.extra_container_options
        if options is not None and options.shm_mb is not None:
            notes.append(
                f"{at}.extraContainerOptions.shmMB ({options.shm_mb}): not applied; instances "
                "use the /dev/shm of the host they run on"
            )
        if options is not None and options.infiniband:
            notes.append(
                f"{at}.extraContainerOptions.infiniband: nothing is set up for it; instances "
                "see the InfiniBand devices of the host they run on"
            )
    if job.deployments and job.defaults.deployment is None:
        notes.append(
            "deployments: none is applied, because defaults.deployment chooses none (name one "
            "there to prepend its preCommands and append its postCommands)"
        )
    notes += extras_findings(job.extras)[1]
    return notes
