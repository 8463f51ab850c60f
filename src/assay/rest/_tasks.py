"""Jobs that are not experiments (OpenPAI jobs, commands, generic tasks): what the master
answers about them, and how each instance's log lines read."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from assay.protocol import TaskInstanceState, TaskState
from assay.rest._common import Request, Resource


class TaskRole(Resource):
    name: str
    instances: int
    commands: list[str] = Field(
        description="As submitted: <% $parameters.x %> and <% $secrets.x %> are filled in "
        "only when an instance starts, so no secret value appears here."
    )
    slots: int = Field(description="Slots (GPUs) per instance.")
    cpu: float
    memory_mb: int
    ports: dict[str, int] = Field(description="Port label -> ports reserved per instance.")
    min_failed_instances: int
    min_succeeded_instances: int | None
    task_retry_count: int
    image: str | None


class TaskInstance(Resource):
    role: str
    index: int
    state: TaskInstanceState
    agent_id: str | None
    host: str = Field(description="The address other instances reach this one at.")
    ports: dict[str, list[int]]
    slots: list[str]
    exit_code: int | None
    retries: int = Field(description="Retries used in the current attempt (taskRetryCount).")
    runs: int
    allocation_id: str | None
    started_at: float | None
    ended_at: float | None
    message: str


class Task(Resource):
    """A job that is not an experiment, with its roles and instances."""

    id: int
    job_id: str = Field(description="Its id in the job queue (`assay job update`).")
    kind: str = Field(description="job (OpenPAI), command, or generic.")
    type: str = Field(description="What the queue shows: JOB, COMMAND or GENERIC.")
    name: str
    user: str
    state: TaskState
    source_format: str
    image: str | None = Field(
        description="Recorded and shown; the commands run as processes on the agents."
    )
    resource_pool: str
    priority: int
    attempt: int = Field(description="Retries of the whole job used (jobRetryCount).")
    job_retry_count: int
    exit_code: int | None
    message: str
    notes: list[str] = Field(description="Keys accepted with a caveat, said at submission.")
    parameters: dict[str, Any]
    secret_names: list[str] = Field(description="The names of its secrets; never their values.")
    has_context: bool
    created_at: float
    started_at: float | None
    ended_at: float | None
    roles: list[TaskRole]
    instances: list[TaskInstance]


class TaskValidation(Resource):
    """A job that would be accepted as submitted. (One that would not is answered 400, as a
    submission is, with each problem's path in ``details``.)"""

    name: str
    kind: str = Field(description="job (OpenPAI), command, or generic.")
    source_format: str = Field(description="What it was read as: openpai-v2, openpai-v1, ...")
    resource_pool: str
    roles: list[str] = Field(description="Its task roles, in the order written.")
    instances: int = Field(description="Instances of every role together.")
    notes: list[str] = Field(description="Keys accepted with a caveat.")
    context_files: int | None = Field(
        description="Files in the context archive sent; null when none was sent."
    )


class TaskSummary(Resource):
    id: int
    job_id: str
    kind: str
    type: str
    name: str
    user: str
    state: TaskState
    resource_pool: str
    instances: int
    running: int
    created_at: float
    started_at: float | None = Field(
        description="When its instances were first placed; null while it waits."
    )
    ended_at: float | None
    exit_code: int | None


class TaskList(Resource):
    tasks: list[TaskSummary]


class TaskLogEntry(Resource):
    id: int = Field(description="Increasing; ask for lines after the last one seen.")
    task_id: int
    allocation_id: str
    role: str
    index: int
    run: int
    stream: str = Field(description="stdout or stderr.")
    time: float
    line: str


class TaskLogPage(Resource):
    logs: list[TaskLogEntry]


class TaskResubmit(Request):
    """A job submitted again as it was submitted: its config, secrets and code."""

    name: str | None = Field(
        default=None,
        min_length=1,
        max_length=128,
        pattern=r"^[A-Za-z0-9_-]+$",
        description="The new job's name. None: the old one; for an OpenPAI job, whose name "
        "names one job of its owner's for good, the old one with the first free `-2`, `-3`... "
        "in place of any such ending.",
    )
