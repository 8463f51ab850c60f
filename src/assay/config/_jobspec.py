"""The native spec of a job that is not an experiment: task roles, each with instances that run
commands. OpenPAI jobs (protocol v2 YAML, v1 JSON), Determined commands and Determined generic
tasks are all read into it (``assay.config._jobfile``, ``assay.config.determined._task``); the
master schedules and runs nothing else.

Templates (``<% $parameters.x %>``, ``<% $secrets.x %>``, ``<% $data.name %>``...) stay in the
stored commands as written; :func:`assay.config.render_commands` substitutes them when an
instance starts, so secret values are never stored in a command or shown with one.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

PROXY_PREFIX = "/proxy"
"""Where the master serves what a task serves: ``/proxy/<task id>/`` (TensorBoards, notebooks)."""


class JobSpecKind(StrEnum):
    """What a job was submitted as (its ``type`` in the queue)."""

    JOB = "job"
    """An OpenPAI job: task roles with instances."""
    COMMAND = "command"
    """A one-off command (``assay cmd run``, Determined's ``det cmd run``)."""
    GENERIC = "generic"
    """A Determined generic task (``assay task create``)."""
    TENSORBOARD = "tensorboard"
    """TensorBoard over trials' event files (``assay tensorboard start``)."""
    NOTEBOOK = "notebook"
    """JupyterLab on a slot or none, reached through the master (``assay notebook start``)."""
    SHELL = "shell"
    """sshd on a slot or none, reached by SSH through the master (``assay shell start``)."""


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TaskRoleSpec(_Spec):
    """One task role: ``instances`` copies of the same commands, each on one agent."""

    name: str = Field(description="Matches ^[A-Za-z_][A-Za-z0-9_]*$ (used in variable names).")
    instances: int = Field(default=1, ge=1)
    commands: list[str] = Field(
        min_length=1,
        description="Run in order in one shell; the first failing command ends the instance "
        "with its exit code.",
    )
    slots: int = Field(default=0, ge=0, description="GPUs (slots) per instance.")
    cpu: float = Field(default=0.0, ge=0, description="Cores per instance; 0 asks for none.")
    memory_mb: int = Field(default=0, ge=0, description="Memory per instance in MiB; 0: none.")
    ports: dict[str, int] = Field(
        default_factory=dict, description="Port label -> how many ports to reserve per instance."
    )
    min_failed_instances: int = Field(
        default=1, description="Failed instances that fail the job; -1: never fails."
    )
    min_succeeded_instances: int | None = Field(
        default=None,
        description="Succeeded instances that end the job SUCCEEDED (stopping the rest); "
        "None: all instances; -1: wait for every instance of every role.",
    )
    task_retry_count: int = Field(default=0, ge=0)
    image: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    data: str | None = Field(default=None, description="Prerequisite named as $data.")
    output: str | None = Field(default=None, description="Prerequisite named as $output.")
    script: str | None = Field(default=None, description="Prerequisite named as $script.")


class Prerequisite(_Spec):
    """An OpenPAI prerequisite, kept so ``<% $data.uri %>`` and the like can be filled in."""

    name: str
    type: str
    uri: str | list[str]
    fields: dict[str, Any] = Field(default_factory=dict, description="Every other key as given.")


REGISTRY_AUTH_SECRET = "registry_auth"
"""The key of :attr:`JobSpec.secrets` that holds a command's registry credentials (JSON):
kept with the secrets, so it is never stored in the spec or shown with it."""


class MountSpec(_Spec):
    """A host directory a containerised instance sees (Determined's ``bind_mounts``)."""

    host_path: str
    container_path: str
    read_only: bool = False
    propagation: str = "rprivate"


class ContainerOptions(_Spec):
    """How an instance's container is made, when it runs in one (a Determined command's
    container settings; the registry credentials travel with the secrets)."""

    force_pull: bool = Field(default=False, description="Pull the image even when present.")
    shm_size: int = Field(default=0, ge=0, description="/dev/shm in bytes; 0: 4 GiB.")
    mounts: list[MountSpec] = Field(default_factory=list)


class JobSpec(_Spec):
    kind: JobSpecKind
    name: str
    source_format: str = Field(
        description="What it was read from: openpai-v2, openpai-v1, determined-command, "
        "determined-task."
    )
    roles: list[TaskRoleSpec] = Field(min_length=1, description="In the order written.")
    image: str | None = Field(default=None, description="The job-wide image, if any.")
    job_retry_count: int = Field(default=0, ge=0)
    parameters: dict[str, Any] = Field(default_factory=dict)
    secrets: dict[str, str] = Field(
        default_factory=dict, description="Values for <% $secrets.x %>; never shown."
    )
    env: dict[str, str] = Field(default_factory=dict, description="Variables of every instance.")
    prerequisites: list[Prerequisite] = Field(default_factory=list)
    pool: str = Field(
        default="",
        description="The resource pool it queues in; '': the master's default pool "
        "(default_compute_pool, or default_aux_pool for a job that asks for no slots).",
    )
    priority: int | None = None
    weight: float = Field(default=1.0, gt=0, description="Its fair-share weight.")
    agent_label: str | None = Field(
        default=None, description="Only agents with this label run its instances."
    )
    description: str = ""
    context_required: bool = Field(
        default=False, description="It runs in an uploaded context directory (commands, tasks)."
    )
    secret_env: list[str] = Field(
        default_factory=list,
        description="Names of variables of env whose values are secret: masked like secrets.",
    )
    notes: list[str] = Field(
        default_factory=list,
        description="One sentence per key that was accepted but is not acted on as written "
        "(a placement hint, a container option), saying what happens instead; shown at "
        "submission.",
    )
    container_options: ContainerOptions = Field(
        default_factory=ContainerOptions,
        description="How its containers are made, when its instances run in containers.",
    )
    containers: bool = Field(
        default=False,
        description="Its instances run in containers of their images, on the agents that run "
        "containers; set by the master at submission when its pool has such agents.",
    )
    checkpoint_storage: dict[str, Any] | None = Field(
        default=None,
        description="The checkpoint storage its instances see, as trials see theirs (a "
        "shared_fs one mounted at its path in a container): the master's own, set by the "
        "master at submission for commands, generic tasks, notebooks and shells.",
    )

    def image_of(self, role: TaskRoleSpec) -> str | None:
        """The image the role's instances run in: the role's own, else the job's."""
        return role.image or self.image

    def role(self, name: str) -> TaskRoleSpec:
        for role in self.roles:
            if role.name == name:
                return role
        raise KeyError(name)

    @property
    def instance_count(self) -> int:
        return sum(r.instances for r in self.roles)
