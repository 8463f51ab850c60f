"""OpenPAI's older job JSON (v1: ``jobName`` and a list of ``taskRoles``) read into a
:class:`JobSpec`.

Each task role runs its one ``command``. ``jobEnvs`` become variables of every instance, and
``dataDir`` / ``outputDir`` the ``PAI_DATA_DIR`` / ``PAI_OUTPUT_DIR`` OpenPAI gave them to. What
needs OpenPAI's HDFS (``codeDir``, a ``$PAI_DEFAULT_FS_URI`` path) or its launcher
(``killAllOnCompletedTaskNumber``, a fixed port) is refused; what only hints at placement or
configures the container is accepted with a note (see ``docs/openpai.md``).
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, Field

from assay.config._base import Problem, config_error, show
from assay.config._jobspec import JobSpec, JobSpecKind, TaskRoleSpec
from assay.config._limits import DB_INT_MAX, MAX_NAME, MAX_SLOTS_PER_TRIAL
from assay.config.openpai._extras import extras_findings, more_successes_than_instances
from assay.config.openpai._v2 import (
    MAX_INSTANCES,
    MAX_PORTS,
    PORT_LABEL_RULE,
    ROLE_NAME,
    ROLE_NAME_RULE,
    MinCount,
    PaiModel,
)

_JOB_NAME = re.compile(r"[A-Za-z0-9\-._~]+")
_DEFAULT_FS = "$PAI_DEFAULT_FS_URI"
Count = Annotated[int, Field(ge=0, le=DB_INT_MAX)]
EnvValue = str | int | float | bool

_REFUSED_JOB_KEYS = {
    "codeDir": (
        "OpenPAI copied this HDFS directory into every task; assay reads no HDFS: put the code "
        "in the commands' reach (an agent's directory, or fetch it in the command) and remove "
        "codeDir"
    ),
    "killAllOnCompletedTaskNumber": (
        "OpenPAI's old launcher ended the job once this many tasks of any role completed, "
        "which assay cannot do; use minSucceededTaskCount on the task role instead"
    ),
}


def _command(value: str) -> str:
    if not value.strip():
        raise config_error("must not be empty: give the command the task role runs")
    return value


class _Port(PaiModel):
    label: str
    begin_at: int = Field(alias="beginAt")
    port_number: Annotated[int, Field(ge=1, le=MAX_PORTS)] = Field(alias="portNumber")

    @classmethod
    def _cross_checks(cls, data: dict[str, Any]) -> list[Problem]:
        problems: list[Problem] = []
        label, begin = data.get("label"), data.get("beginAt")
        if isinstance(label, str) and not ROLE_NAME.fullmatch(label):
            problems.append((("label",), f"port labels {PORT_LABEL_RULE}"))
        if isinstance(begin, int) and not isinstance(begin, bool) and begin != 0:
            problems.append(
                (
                    ("beginAt",),
                    f"a fixed first port ({begin}) cannot be honoured: assay reserves free "
                    "ports for each instance and names them in PAI_PORT_LIST_<role>_<index>_"
                    "<label>; read the port from there and set beginAt to 0",
                )
            )
        return problems


class _Role(PaiModel):
    name: Annotated[str, Field(max_length=MAX_NAME)]
    task_number: Annotated[int, Field(ge=1, le=MAX_INSTANCES)] = Field(alias="taskNumber")
    cpu_number: Annotated[int, Field(ge=1, le=DB_INT_MAX)] = Field(alias="cpuNumber")
    memory_mb: Annotated[int, Field(ge=100, le=DB_INT_MAX)] = Field(alias="memoryMB")
    shm_mb: Count | None = Field(None, alias="shmMB")
    gpu_number: Annotated[int, Field(ge=0, le=MAX_SLOTS_PER_TRIAL)] = Field(alias="gpuNumber")
    port_list: list[_Port] = Field([], alias="portList")
    command: Annotated[str, AfterValidator(_command)]
    min_failed: MinCount | None = Field(None, alias="minFailedTaskCount")
    min_succeeded: MinCount | None = Field(None, alias="minSucceededTaskCount")

    @classmethod
    def _cross_checks(cls, data: dict[str, Any]) -> list[Problem]:
        problems: list[Problem] = []
        name = data.get("name")
        if isinstance(name, str) and not ROLE_NAME.fullmatch(name):
            problems.append((("name",), f"task role names {ROLE_NAME_RULE}; rename it"))
        labels = [p.get("label") for p in data.get("portList") or [] if isinstance(p, dict)]
        for i, label in enumerate(labels):
            if isinstance(label, str) and label in labels[:i]:
                problems.append((("portList", i, "label"), f"another port is labelled {label}"))
        return problems


class OpenPaiJobV1(PaiModel):
    job_name: Annotated[str, Field(max_length=MAX_NAME)] = Field(alias="jobName")
    image: Annotated[str, Field(min_length=1)]
    auth_file: str | None = Field(None, alias="authFile")
    data_dir: str | None = Field(None, alias="dataDir")
    output_dir: str | None = Field(None, alias="outputDir")
    code_dir: Any = Field(None, alias="codeDir")
    virtual_cluster: Annotated[str, Field(max_length=MAX_NAME)] | None = Field(
        None, alias="virtualCluster"
    )
    task_roles: Annotated[list[_Role], Field(min_length=1)] = Field(alias="taskRoles")
    gpu_type: str | None = Field(None, alias="gpuType")
    retry_count: Count = Field(0, alias="retryCount")
    job_envs: dict[str, EnvValue] = Field({}, alias="jobEnvs")
    extras: dict[str, Any] = {}
    kill_all: Any = Field(None, alias="killAllOnCompletedTaskNumber")

    @classmethod
    def _cross_checks(cls, data: dict[str, Any]) -> list[Problem]:
        problems: list[Problem] = [
            ((key,), message) for key, message in _REFUSED_JOB_KEYS.items() if key in data
        ]
        name = data.get("jobName")
        if isinstance(name, str) and name and _JOB_NAME.fullmatch(name) is None:
            problems.append(
                (
                    ("jobName",),
                    f"must match ^[A-Za-z0-9\\-._~]+$ (letters, digits and - . _ ~), got "
                    f"{show(name)}",
                )
            )
        for key in ("dataDir", "outputDir"):
            value = data.get(key)
            if isinstance(value, str) and _DEFAULT_FS in value:
                problems.append(
                    (
                        (key,),
                        f"{_DEFAULT_FS} names OpenPAI's HDFS, which assay has not: give the "
                        "full URI or path the code should read",
                    )
                )
        roles = data.get("taskRoles")
        names = (
            [r.get("name") for r in roles if isinstance(r, dict)] if isinstance(roles, list) else []
        )
        for i, role_name in enumerate(names):
            if isinstance(role_name, str) and role_name in names[:i]:
                problems.append(
                    (("taskRoles", i, "name"), f"another task role is named {role_name}")
                )
        problems += extras_findings(data.get("extras"))[0]
        return problems


def _env_text(value: EnvValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"  # as OpenPAI's JavaScript wrote it
    return str(value)


def build_v1(job: OpenPaiJobV1, raw: dict[str, Any]) -> JobSpec:
    """The spec of a validated v1 job; ``raw`` (as written) tells a null from an absent key."""
    env = {key: _env_text(value) for key, value in job.job_envs.items()}
    if job.data_dir is not None:
        env["PAI_DATA_DIR"] = job.data_dir
    if job.output_dir is not None:
        env["PAI_OUTPUT_DIR"] = job.output_dir
    roles = [
        TaskRoleSpec(
            name=role.name,
            instances=role.task_number,
            commands=[role.command],
            slots=role.gpu_number,
            cpu=float(role.cpu_number),
            memory_mb=role.memory_mb,
            ports={p.label: p.port_number for p in role.port_list},
            min_failed_instances=_min_failed(role, written),
            # Null (the default) waits for every task of every role, as -1 does in v2.
            min_succeeded_instances=-1 if role.min_succeeded is None else role.min_succeeded,
            image=job.image,
        )
        for role, written in zip(job.task_roles, raw["taskRoles"], strict=True)
    ]
    return JobSpec(
        kind=JobSpecKind.JOB,
        name=job.job_name,
        source_format="openpai-v1",
        roles=roles,
        image=job.image,
        job_retry_count=job.retry_count,
        env=env,
        pool=job.virtual_cluster or "",
        notes=_notes(job),
    )


def _min_failed(role: _Role, written: dict[str, Any]) -> int:
    if role.min_failed is not None:
        return role.min_failed
    # A null minFailedTaskCount never fails the job; an absent one fails it at the first.
    return -1 if "minFailedTaskCount" in written else 1


def _notes(job: OpenPaiJobV1) -> list[str]:
    notes = [
        f"image ({job.image}): recorded as the image of every instance; an agent without a "
        "container runtime runs the commands on its host, with the software installed there"
    ]
    if job.auth_file is not None:
        notes.append(
            "authFile: registry credentials are not used; an agent that runs containers pulls "
            "the image without them"
        )
    if job.gpu_type is not None:
        notes.append(
            f"gpuType ({job.gpu_type}): not used for placement; instances run on any agent "
            "with enough slots"
        )
    for i, role in enumerate(job.task_roles):
        wanted = role.min_succeeded
        if wanted is not None and wanted > role.task_number:
            notes.append(
                more_successes_than_instances(
                    f"taskRoles[{i}].minSucceededTaskCount", wanted, role.task_number
                )
            )
        if role.shm_mb is not None:
            notes.append(
                f"taskRoles[{i}].shmMB ({role.shm_mb}): not applied; instances use the /dev/shm "
                "of the host they run on"
            )
    if job.job_envs.get("paiAzRDMA") is True:
        notes.append("jobEnvs.paiAzRDMA: set as a variable only; nothing is set up for Azure RDMA")
    if job.job_envs.get("isDebug") is True:
        notes.append(
            "jobEnvs.isDebug: set as a variable only; a failed instance is not kept for debugging"
        )
    notes += extras_findings(job.extras)[1]
    return notes
