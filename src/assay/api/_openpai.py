"""OpenPAI's REST API v2 for jobs, on the same master, so scripts written for an OpenPAI
rest-server keep working: submit (YAML body), list, read ``{user}~{job}``, stop. Answers and
errors have OpenPAI's shapes (:mod:`assay.rest._openpai`); sign in as for ``/api/v1``."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

import yaml
from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse, PlainTextResponse

from assay import rest
from assay.api._deps import SIGNED_IN, ActorDep, MasterDep
from assay.config import JobSpecKind, load_job_file
from assay.errors import AssayError, InvalidRequest, NotFound
from assay.protocol import TaskState

router = APIRouter(prefix="/api/v2/jobs", tags=["openpai"], dependencies=SIGNED_IN)

AnyFrame = Annotated[
    str, Path(max_length=512, description="`{user}~{job}`, as OpenPAI names a job.")
]
"""A frame checked by the route, so a malformed one gets OpenPAI's JSON error."""

Frame = Annotated[
    str,
    Path(
        max_length=512,
        pattern=r"^[^~\x00]+~[^~\x00]+$",
        description="`{user}~{job}`, as OpenPAI names a job.",
    ),
]

T = TypeVar("T")

_CODES: dict[int, str] = {
    400: rest.PaiErrorCode.BAD_CONFIGURATION,
    401: rest.PaiErrorCode.UNAUTHORIZED_USER,
    403: rest.PaiErrorCode.FORBIDDEN_USER,
    404: rest.PaiErrorCode.NO_JOB,
    409: rest.PaiErrorCode.CONFLICT_JOB,
}


async def _pai(call: Callable[[], Awaitable[T]]) -> T | JSONResponse:
    """``call()``, with an error answered as OpenPAI did, ``{"code", "message"}``, beside
    assay's own ``{"error": {...}}``: one body both kinds of client read."""
    try:
        return await call()
    except AssayError as exc:
        status = exc.status if exc.status < 500 else 500
        message = exc.message
        # OpenPAI's clients read only the message: it lists each problem, once.
        details = [d for d in exc.details if d.message not in message]
        if details:
            message += ": " + "; ".join(str(d) for d in details)
        code = _CODES.get(status, rest.PaiErrorCode.UNKNOWN)
        body = rest.PaiError(code=code, message=message).model_dump(exclude_none=True)
        return JSONResponse({**body, **exc.to_json()}, status_code=status)


def _ms(seconds: float | None) -> int | None:
    return None if seconds is None else int(seconds * 1000)


def _common(task: rest.Task) -> dict[str, Any]:
    return {
        "username": task.user,
        "state": task.state,
        "sub_state": task.state.value,
        "execution_type": rest.PaiExecutionType.STOP
        if task.state in (TaskState.STOPPING, TaskState.STOPPED)
        else rest.PaiExecutionType.START,
        "retries": task.attempt,
        "retry_details": rest.PaiRetryDetails(user=task.attempt),
        "created_time": _ms(task.created_at) or 0,
        "completed_time": _ms(task.ended_at),
        "app_exit_code": task.exit_code,
        "virtual_cluster": task.resource_pool,
    }


def summary(task: rest.Task) -> rest.PaiJobSummary:
    return rest.PaiJobSummary(
        name=task.name,
        debug_id=f"task-{task.id}",
        total_gpu_number=sum(r.slots * r.instances for r in task.roles),
        total_task_number=sum(r.instances for r in task.roles),
        total_task_role_number=len(task.roles),
        **_common(task),
    )


def detail(task: rest.Task) -> rest.PaiJobDetail:
    roles: dict[str, rest.PaiTaskRole] = {}
    for role in task.roles:
        statuses = [
            rest.PaiTaskStatus(
                task_index=i.index,
                task_state=TaskState(i.state.value),
                container_id=i.allocation_id,
                container_ip=i.host or None,
                container_node_name=i.agent_id,
                container_ports={k: ",".join(str(p) for p in v) for k, v in i.ports.items()},
                container_gpus=len(i.slots),
                container_exit_code=i.exit_code,
                container_exit_diagnostics=i.message or None,
                retries=i.retries,
                created_time=_ms(task.created_at),
                current_attempt_launched_time=_ms(i.started_at),
                current_attempt_completed_time=_ms(i.ended_at),
            )
            for i in task.instances
            if i.role == role.name
        ]
        roles[role.name] = rest.PaiTaskRole(
            task_role_status=rest.PaiTaskRoleStatus(name=role.name), task_statuses=statuses
        )
    status = rest.PaiJobStatus(
        app_id=f"task-{task.id}.{task.attempt}",
        app_progress=1.0 if task.ended_at else 0.0,
        app_launched_time=_ms(task.started_at),
        app_completed_time=_ms(task.ended_at),
        app_exit_trigger_message=task.message or None,
        **_common(task),
    )
    return rest.PaiJobDetail(
        name=task.name, job_status=status, task_roles=roles, debug_id=f"task-{task.id}"
    )


def _split(frame: str) -> tuple[str, str]:
    user, _, name = frame.partition("~")
    return user, name


@router.post("", status_code=202, response_model=rest.PaiMessage)
async def submit(request: Request, master: MasterDep, actor: ActorDep) -> Any:
    """Submit a job: the protocol YAML (v2) or the v1 JSON as the request body."""

    async def run() -> JSONResponse:
        # Read as a job file is: UTF-8 only, a bad byte named with its offset, line and column.
        spec = await asyncio.to_thread(load_job_file, await request.body())
        # A name the user has given a job before is refused (409), as on OpenPAI.
        await master.tasks.submit(actor, spec, None)
        message = rest.PaiMessage(
            status=202, message=f"Update job {spec.name} for user {actor.username} successfully."
        )
        return JSONResponse(message.model_dump(exclude_none=True), status_code=202)

    return await _pai(run)


_FILTERS = ("username", "vc", "state")
"""The query filters of ``GET /api/v2/jobs``."""


@router.get("", response_model=list[rest.PaiJobSummary])
async def list_jobs(
    request: Request,
    master: MasterDep,
    username: Annotated[str | None, Query(max_length=64, pattern=rest.NO_NUL)] = None,
    vc: Annotated[
        str | None, Query(max_length=128, pattern=rest.NO_NUL, description="Pool (vc).")
    ] = None,
    state: Annotated[TaskState | None, Query(description="Only jobs in this state.")] = None,
) -> Any:
    """OpenPAI jobs (not experiments, commands or tasks), newest first; ``username``, ``vc``
    (the resource pool) and ``state`` keep only the matching ones."""

    async def run() -> JSONResponse:
        unknown = sorted(set(request.query_params) - set(_FILTERS))
        if unknown:
            message = f"unknown query parameter {unknown[0]!r}; GET /api/v2/jobs filters by " + (
                ", ".join(_FILTERS)
            )
            body = rest.PaiError(code=rest.PaiErrorCode.INVALID_PARAMETERS, message=message)
            # Both shapes, as every other error here: OpenPAI's clients and assay's read it.
            return JSONResponse(
                {**body.model_dump(exclude_none=True), **InvalidRequest(message).to_json()},
                status_code=400,
            )
        listing = await master.tasks.listing(user=username)
        out = []
        named: set[tuple[str, str]] = set()
        for item in listing.tasks:
            if item.kind != JobSpecKind.JOB.value:
                continue
            # Newest first: a name that an earlier version let several jobs share names only
            # its newest job, as ``user~name`` does.
            if (item.user, item.name) in named:
                continue
            named.add((item.user, item.name))
            if vc is not None and item.resource_pool != vc:
                continue
            if state is not None and item.state != state:
                continue
            out.append(summary(await master.tasks.get(item.id)).model_dump(mode="json"))
        return JSONResponse(out)

    return await _pai(run)


def _frame(frame: str) -> tuple[str, str]:
    user, tilde, name = frame.partition("~")
    if not tilde or not user or not name or "~" in name:
        raise NotFound(f"no job {frame!r}: OpenPAI names a job user~job, e.g. alice~mnist")
    return user, name


@router.get("/{frame}", response_model=rest.PaiJobDetail)
async def get_job(frame: AnyFrame, master: MasterDep) -> Any:
    async def run() -> JSONResponse:
        task = await master.tasks.by_name(*_frame(frame))
        return JSONResponse(detail(task).model_dump(mode="json"))

    return await _pai(run)


@router.get(
    "/{frame}/config",
    responses={200: {"content": {"text/yaml": {"schema": {"type": "string"}}}}},
)
async def get_job_config(frame: AnyFrame, master: MasterDep) -> Any:
    """The job's config as protocol v2 YAML, as assay runs it: secrets show as ``******``."""

    async def run() -> PlainTextResponse:
        task = await master.tasks.by_name(*_frame(frame))
        text = yaml.safe_dump(protocol_v2(task), sort_keys=False, allow_unicode=True)
        return PlainTextResponse(text, media_type="text/yaml")

    return await _pai(run)


MASKED = "******"


def protocol_v2(task: rest.Task) -> dict[str, Any]:
    """``task`` written back as an OpenPAI protocol v2 job; secret values masked."""
    named = {r.image for r in task.roles if r.image}
    images = sorted(named | {task.image} if task.image else named)
    names = {image: f"image{i}" if i else "image" for i, image in enumerate(images)}
    roles: dict[str, Any] = {}
    for role in task.roles:
        entry: dict[str, Any] = {"instances": role.instances}
        image = role.image or task.image
        if image:
            entry["dockerImage"] = names[image]
        entry["resourcePerInstance"] = {
            "cpu": role.cpu,
            "memoryMB": role.memory_mb,
            "gpu": role.slots,
            **({"ports": dict(role.ports)} if role.ports else {}),
        }
        completion: dict[str, Any] = {"minFailedInstances": role.min_failed_instances}
        if role.min_succeeded_instances is not None:
            completion["minSucceededInstances"] = role.min_succeeded_instances
        entry["completion"] = completion
        entry["taskRetryCount"] = role.task_retry_count
        entry["commands"] = list(role.commands)
        roles[role.name] = entry
    out: dict[str, Any] = {"protocolVersion": 2, "name": task.name, "type": "job"}
    if images:
        out["prerequisites"] = [
            {"name": names[image], "type": "dockerimage", "uri": image} for image in images
        ]
    if task.parameters:
        out["parameters"] = dict(task.parameters)
    if task.secret_names:
        out["secrets"] = {name: MASKED for name in task.secret_names}
    out["jobRetryCount"] = task.job_retry_count
    out["taskRoles"] = roles
    out["defaults"] = {"virtualCluster": task.resource_pool}
    return out


@router.put("/{frame}/executionType", status_code=202, response_model=rest.PaiMessage)
async def set_execution_type(
    frame: Frame, change: rest.PaiExecutionTypeChange, master: MasterDep, actor: ActorDep
) -> Any:
    """``{"value": "STOP"}`` stops the job. Starting a stopped job again is not offered:
    submit it again."""

    async def run() -> JSONResponse:
        user, name = _split(frame)
        task = await master.tasks.by_name(user, name)
        if change.value == rest.PaiExecutionType.START:
            raise InvalidRequest(
                f"job {frame} cannot be started again; submit it again under another name "
                "(POST /api/v2/jobs): a name names one job for good, as on OpenPAI"
            )
        if task.state not in (TaskState.STOPPING, TaskState.STOPPED) and task.ended_at is None:
            await master.tasks.stop(actor, task.id)
        message = rest.PaiMessage(
            status=202, message=f"Execute job {name} for user {user} successfully."
        )
        return JSONResponse(message.model_dump(exclude_none=True), status_code=202)

    return await _pai(run)


# Last: it answers only what no route above takes.
@router.api_route(
    "/{anything:path}",
    methods=["GET", "POST", "PUT", "DELETE", "PATCH"],
    include_in_schema=False,
)
async def no_such_route(anything: str) -> JSONResponse:
    """A path under /api/v2/jobs that names nothing: OpenPAI's JSON error, not a page."""
    body = rest.PaiError(
        code=rest.PaiErrorCode.NO_API,
        message=f"no such route: /api/v2/jobs/{anything}; see GET /api/v2/jobs/{{user}}~{{job}}",
    )
    return JSONResponse(body.model_dump(exclude_none=True), status_code=404)
