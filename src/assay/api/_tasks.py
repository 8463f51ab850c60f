"""``POST /api/v1/jobs`` (submit an OpenPAI job, a command or a generic task) and
``/api/v1/tasks``: read them, follow their instances' logs, stop them."""

from __future__ import annotations

import asyncio
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, File, Form, Path, Query, UploadFile
from fastapi.responses import StreamingResponse

from assay import rest
from assay.api._deps import SIGNED_IN, ActorDep, MasterDep
from assay.api._events import log_stream
from assay.api._upload import UploadRoute, read_context, require_multipart
from assay.config import JobSpec, JobSpecKind, load_job_file, load_task_config
from assay.master import TASK_LOG_PAGE as LOG_PAGE

submit = APIRouter(
    prefix="/api/v1/jobs", tags=["jobs"], dependencies=SIGNED_IN, route_class=UploadRoute
)
router = APIRouter(prefix="/api/v1/tasks", tags=["tasks"], dependencies=SIGNED_IN)

TaskId = Annotated[int, Path(ge=0, le=rest.INT_MAX, description="A job's (task's) id.")]
RoleName = Annotated[
    str | None, Query(max_length=128, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", description="A role.")
]


def parse_job(text: str, kind: str, overrides: tuple[str, ...], filename: str = "") -> JobSpec:
    """The spec of a submitted file: an OpenPAI job (v2 YAML or v1 JSON) or a Determined
    command or generic-task config; raises InvalidConfig with every problem."""
    if kind == "job":
        return load_job_file(text, filename=filename)
    return load_task_config(
        text,
        kind=JobSpecKind.COMMAND if kind == "command" else JobSpecKind.GENERIC,
        overrides=list(overrides),
    )


@submit.post(
    "",
    status_code=201,
    dependencies=[Depends(require_multipart)],
    form_limits={"max_files": 1},
    responses={413: {"description": "The body or the context archive is over its limit."}},
)
async def submit_job(
    master: MasterDep,
    actor: ActorDep,
    overrides: Annotated[
        list[str], Form(default_factory=list, description="`key.path=value` (commands, tasks).")
    ],
    config: Annotated[
        str,
        Form(
            description="The job as written: OpenPAI protocol v2 YAML or v1 JSON, or a "
            "Determined command / generic-task config."
        ),
    ] = "",  # Empty: refused as an empty job file, not as a missing field.
    kind: Annotated[
        Literal["job", "command", "generic"],
        Form(description="job: detect the format from its keys; command; generic (task)."),
    ] = "job",
    context: Annotated[
        UploadFile | None,
        File(
            description="Optional: a directory as tar.gz the instances start in.",
            json_schema_extra={"format": "binary"},
        ),
    ] = None,
) -> rest.Task:
    """Submit a job that is not an experiment; it waits in its pool's queue for all of its
    instances to fit at once."""
    spec = await asyncio.to_thread(parse_job, config, kind, tuple(overrides))
    data = None if context is None else await read_context(context)
    return await master.tasks.submit(actor, spec, data)


@submit.post(
    "/validate",
    dependencies=[Depends(require_multipart)],
    form_limits={"max_files": 1},
)
async def validate_job(
    master: MasterDep,
    overrides: Annotated[
        list[str], Form(default_factory=list, description="`key.path=value` (commands, tasks).")
    ],
    config: Annotated[str, Form(description="The job as `POST /api/v1/jobs` takes it.")] = "",
    kind: Annotated[
        Literal["job", "command", "generic"],
        Form(description="job: detect the format from its keys; command; generic (task)."),
    ] = "job",
    context: Annotated[
        UploadFile | None,
        File(description="Optional: the context tar.gz.", json_schema_extra={"format": "binary"}),
    ] = None,
) -> rest.TaskValidation:
    """Check a job as `POST /api/v1/jobs` would, creating nothing. Invalid answers 400 with
    each problem's `path` and `message` in `details`."""
    spec = await asyncio.to_thread(parse_job, config, kind, tuple(overrides))
    data = None if context is None else await read_context(context)
    return await master.tasks.validate(spec, data)


@router.get("")
async def list_tasks(
    master: MasterDep,
    user: Annotated[
        str | None, Query(max_length=64, pattern=rest.NO_NUL, description="Only this owner's.")
    ] = None,
    active: Annotated[bool, Query(description="Only those not ended.")] = False,
    state: Annotated[
        list[rest.TaskState], Query(description="Only those in these states (any of them).")
    ] = [],  # noqa: B006
    limit: Annotated[int, Query(ge=1, le=1000)] = 1000,
) -> rest.TaskList:
    """Jobs that are not experiments, newest first."""
    return await master.tasks.listing(
        user=user, active_only=active, states=[s.value for s in state], limit=limit
    )


@router.get("/{task_id}")
async def get_task(task_id: TaskId, master: MasterDep) -> rest.Task:
    """A job with its roles and instances (state, host, ports, exit code, retries)."""
    return await master.tasks.get(task_id)


@router.post("/{task_id}/stop")
async def stop_task(task_id: TaskId, master: MasterDep, actor: ActorDep) -> rest.Task:
    """Stop every instance (SIGTERM, then SIGKILL); the job ends STOPPED."""
    return await master.tasks.stop(actor, task_id)


@router.post("/{task_id}/resubmit", status_code=201)
async def resubmit_task(
    task_id: TaskId, body: rest.TaskResubmit, master: MasterDep, actor: ActorDep
) -> rest.Task:
    """A new job of yours as this one was submitted (yours, or any for an admin): its config,
    secrets and code, queued anew; an OpenPAI job under a new name (OpenPAI's Clone)."""
    return await master.tasks.resubmit(actor, task_id, body.name)


_EVENT_STREAM = {
    "description": "With follow=true: server-sent `log` events (each a TaskLogEntry), ending "
    "with an `end` event once the job and its processes have ended.",
    "content": {"text/event-stream": {"schema": {"type": "string"}}},
}


@router.get("/{task_id}/logs", response_model=rest.TaskLogPage, responses={200: _EVENT_STREAM})
async def get_task_logs(
    task_id: TaskId,
    master: MasterDep,
    role: RoleName = None,
    index: Annotated[int | None, Query(ge=0, le=rest.INT_MAX)] = None,
    follow: bool = False,
    after: Annotated[int, Query(ge=0, le=rest.INT_MAX)] = 0,
    limit: Annotated[int, Query(ge=1, le=100_000)] = LOG_PAGE,
) -> rest.TaskLogPage | StreamingResponse:
    """Its instances' lines, oldest first; ``role`` (and ``index``) pick one role (instance)."""
    if not follow:
        return await master.tasks.logs(task_id, after, limit, role, index)
    return log_stream(await master.tasks.follow_logs(task_id, after, role, index))
