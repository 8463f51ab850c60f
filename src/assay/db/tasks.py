"""Tasks: jobs that are not experiments (OpenPAI jobs, commands, generic tasks), their
instances, and their log lines."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from assay.db import logs
from assay.db._models import Job, Task, TaskInstance, TaskLog
from assay.db._moves import move_storage
from assay.errors import Conflict
from assay.protocol import TERMINAL_TASK_STATES, LogEntry, TaskInstanceState, TaskState


def create(
    session: Session,
    *,
    job: Job,
    kind: str,
    name: str,
    owner: str,
    spec: dict[str, Any],
    secrets: dict[str, str],
    context_id: int | None,
    roles: Sequence[tuple[str, int]],
    now: float,
    unique_name: bool = False,
) -> Task:
    """A new WAITING task of ``job`` with ``instances`` WAITING instances per (role, count).

    ``unique_name`` (an OpenPAI job): ``owner~name`` names it, and :class:`Conflict` when a
    task of ``owner`` holds that name already, whatever the caller checked before: the
    database's unique index decides between two submissions at once."""
    task = Task(
        job_id=job.id,
        kind=kind,
        name=name,
        owner=owner,
        job_name=name if unique_name else None,
        state=TaskState.WAITING,
        spec=spec,
        secrets=dict(secrets),
        context_id=context_id,
        attempt=0,
        retrying=False,
        stop_requested=False,
        message="",
        created_at=now,
    )
    session.add(task)
    try:
        session.flush()
    except IntegrityError as exc:
        if "job_name" not in str(exc.orig):
            raise
        raise Conflict(
            f"job name {name!r} is taken by another of your jobs, submitted just now; "
            "give this job another name"
        ) from None
    for role, count in roles:
        for index in range(count):
            session.add(
                TaskInstance(
                    task_id=task.id,
                    role=role,
                    index=index,
                    state=TaskInstanceState.WAITING,
                    retries=0,
                    runs=0,
                    live=False,
                    started=False,
                    kill_requested=False,
                    host="",
                    slots=[],
                    ports={},
                    cpu=0.0,
                    memory_mb=0,
                    message="",
                )
            )
    session.flush()
    return task


def mark_running(session: Session, task: Task, *, at: float) -> None:
    """An instance of the waiting task was placed: it runs, started ``at`` unless it had
    started before (an attempt after a job retry keeps its first start)."""
    task.state = TaskState.RUNNING
    task.started_at = task.started_at or at


def request_stop(session: Session, task: Task, *, message: str) -> None:
    """Its user asked the task to stop: it is STOPPING until its live instances are gone."""
    task.stop_requested = True
    task.state = TaskState.STOPPING
    task.message = message


def begin_retry(session: Session, task: Task, *, message: str) -> None:
    """The attempt failed with a job retry left: the job starts again once no instance of it
    is live (:func:`start_attempt`)."""
    task.retrying = True
    task.message = message


def start_attempt(session: Session, task: Task, insts: Sequence[TaskInstance]) -> None:
    """The job's next attempt: the task and every one of its instances ``insts`` wait to be
    placed again, the instances with their retries and last outcome cleared."""
    task.retrying = False
    task.attempt += 1
    task.state = TaskState.WAITING
    for inst in insts:
        inst.state = TaskInstanceState.WAITING
        inst.retries = 0
        inst.exit_code = None
        inst.message = ""


def end(
    session: Session,
    task: Task,
    *,
    state: TaskState,
    at: float,
    message: str,
    exit_code: int | None = None,
) -> None:
    """The task reached its outcome ``state`` (its ``exit_code`` when given); a task that
    ended before keeps its first end time."""
    if exit_code is not None:
        task.exit_code = exit_code
    task.state = state
    task.ended_at = task.ended_at or at
    task.message = message


def set_spec_pool(session: Session, task: Task, *, pool: str) -> None:
    """The task's spec, as it is shown, names ``pool``: its job moved there."""
    task.spec = {**task.spec, "pool": pool}


# -- its instances --------------------------------------------------------------------------------


def start_run(
    session: Session,
    inst: TaskInstance,
    *,
    run: int,
    allocation_id: str,
    agent_id: str,
    host: str,
    slots: Sequence[str],
    ports: dict[str, list[int]],
    cpu: float,
    memory_mb: int,
    at: float,
    token: str = "",
) -> None:
    """The instance's run ``run`` (its allocation ``allocation_id``) starts on ``agent_id``,
    holding ``slots``, ``ports`` on ``host``, ``cpu`` cores and ``memory_mb``, with ``token``
    (kept as its digest; :func:`live_instance_by_token`); what its last run left (exit code,
    end, message, a kill asked for, its token) is cleared."""
    inst.token_digest = _digest(token) if token else None
    inst.runs = run
    inst.allocation_id = allocation_id
    inst.state = TaskInstanceState.RUNNING
    inst.live = True
    inst.started = False
    inst.kill_requested = False
    inst.agent_id = agent_id
    inst.host = host
    inst.slots = list(slots)
    inst.ports = ports
    inst.cpu = cpu
    inst.memory_mb = memory_mb
    inst.exit_code = None
    inst.started_at = at
    inst.ended_at = None
    inst.message = ""


def mark_started(session: Session, inst: TaskInstance, *, address: str = "") -> None:
    """The agent said the instance's current run started its process, listening at
    ``address`` where that is not the agent's (then it is the instance's host)."""
    inst.started = True
    if address:
        inst.host = address


def end_run(
    session: Session,
    inst: TaskInstance,
    *,
    exit_code: int | None,
    state: TaskInstanceState,
    message: str,
    at: float,
) -> None:
    """The instance's run ended ``at`` with ``exit_code`` (None: lost with its agent), leaving
    it ``state``; a kill asked for is done with."""
    _run_over(inst, exit_code, at)
    inst.state = state
    inst.message = message
    inst.kill_requested = False


def requeue(
    session: Session, inst: TaskInstance, *, exit_code: int | None, message: str, at: float
) -> None:
    """The instance's run failed ``at`` with ``exit_code`` (None: lost with its agent) and
    it waits to run again, one more of its retries spent."""
    _run_over(inst, exit_code, at)
    inst.retries += 1
    inst.state = TaskInstanceState.WAITING
    inst.message = message
    inst.kill_requested = False


def _run_over(inst: TaskInstance, exit_code: int | None, at: float) -> None:
    inst.live = False
    inst.token_digest = None  # the run's token acts for no one once it is over
    inst.exit_code = exit_code
    inst.ended_at = at


def stop_waiting(session: Session, insts: Sequence[TaskInstance]) -> None:
    """Those of ``insts`` still waiting to be placed never will be: STOPPED."""
    for inst in insts:
        if inst.state == TaskInstanceState.WAITING:
            inst.state = TaskInstanceState.STOPPED


def request_kill(session: Session, inst: TaskInstance) -> None:
    """The live instance's process is to be killed (its exit ends the run)."""
    inst.kill_requested = True


def get(session: Session, task_id: int) -> Task | None:
    return session.get(Task, task_id)


def by_job(session: Session, job_id: str) -> Task | None:
    return session.scalars(select(Task).where(Task.job_id == job_id)).first()


def by_job_name(session: Session, owner: str, name: str) -> Task | None:
    """The OpenPAI job ``owner~name`` names (OpenPAI's ``user~job`` address), if any."""
    return session.scalars(select(Task).where(Task.owner == owner, Task.job_name == name)).first()


def listing(
    session: Session,
    *,
    owner: str | None = None,
    active_only: bool = False,
    limit: int = 1000,
    kind: str | None = None,
    states: Sequence[str] = (),
) -> Sequence[Task]:
    """Tasks (of ``kind`` only, in ``states`` only, when given), newest first."""
    stmt = select(Task).order_by(Task.id.desc()).limit(limit)
    if states:
        stmt = stmt.where(Task.state.in_(states))
    if owner is not None:
        stmt = stmt.where(Task.owner == owner)
    if kind is not None:
        stmt = stmt.where(Task.kind == kind)
    if active_only:
        stmt = stmt.where(Task.state.not_in(TERMINAL_TASK_STATES))
    return session.scalars(stmt).all()


def active(session: Session) -> Sequence[Task]:
    """Tasks not ended, oldest first."""
    return session.scalars(
        select(Task).where(Task.state.not_in(TERMINAL_TASK_STATES)).order_by(Task.id)
    ).all()


def instances(session: Session, task_id: int) -> Sequence[TaskInstance]:
    """The task's instances, by role (in creation order) and index."""
    return session.scalars(
        select(TaskInstance).where(TaskInstance.task_id == task_id).order_by(TaskInstance.id)
    ).all()


# Run by every scheduling pass, so built once (building one costs more than running it).
_LIVE_INSTANCES = (
    select(TaskInstance, Task, Job)
    .join(Task, TaskInstance.task_id == Task.id)
    .join(Job, Task.job_id == Job.id)
    .where(TaskInstance.live.is_(True))
)
_WAITING = (
    select(Task, Job)
    .join(Job, Task.job_id == Job.id)
    .where(
        Task.state.in_((TaskState.WAITING, TaskState.RUNNING)),
        Task.retrying.is_(False),
        Task.stop_requested.is_(False),
        Task.id.in_(
            select(TaskInstance.task_id).where(TaskInstance.state == TaskInstanceState.WAITING)
        ),
    )
    .order_by(Task.id)
)


def live_instances(session: Session) -> list[tuple[TaskInstance, Task, Job]]:
    """Instances with a process starting or running, with their task and job."""
    rows = session.execute(_LIVE_INSTANCES).all()
    return [(i, t, j) for i, t, j in rows]


def waiting(session: Session) -> list[tuple[Task, Job]]:
    """Tasks with instances to place (and no retry of the whole job pending), oldest first."""
    rows = session.execute(_WAITING).all()
    return [(t, j) for t, j in rows]


def last_said(session: Session, task_id: int, prefix: str) -> str | None:
    """The task's last stderr line that starts with ``prefix`` (where a launcher of assay's
    says why it ended), or None."""
    return session.scalars(
        select(TaskLog.line)
        .where(
            TaskLog.task_id == task_id,
            TaskLog.stream == "stderr",
            TaskLog.line.startswith(prefix, autoescape=True),
        )
        .order_by(TaskLog.id.desc())
        .limit(1)
    ).first()


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def live_instance_by_token(session: Session, token: str) -> TaskInstance | None:
    """The live instance whose current run was given ``token``; None for any other token."""
    return session.scalars(
        select(TaskInstance).where(
            TaskInstance.token_digest == _digest(token), TaskInstance.live.is_(True)
        )
    ).first()


def instance_by_allocation(session: Session, allocation_id: str) -> TaskInstance | None:
    return session.scalars(
        select(TaskInstance).where(TaskInstance.allocation_id == allocation_id)
    ).first()


def live_on_agent(session: Session, agent_id: str) -> Sequence[TaskInstance]:
    return session.scalars(
        select(TaskInstance).where(TaskInstance.live.is_(True), TaskInstance.agent_id == agent_id)
    ).all()


def insert_logs(session: Session, task_id: int, entries: Sequence[LogEntry]) -> None:
    logs.insert(session, entries, task_id=task_id)


def logs_after(
    session: Session,
    task_id: int,
    after_id: int,
    limit: int,
    allocation_prefix: str | None = None,
) -> Sequence[TaskLog]:
    """Up to ``limit`` of the task's lines with an id above ``after_id``, in order; only those
    of allocations whose id starts with ``allocation_prefix`` when given."""
    stmt = (
        select(TaskLog)
        .where(TaskLog.task_id == task_id, TaskLog.id > after_id)
        .order_by(TaskLog.id)
        .limit(limit)
    )
    if allocation_prefix is not None:
        escaped = allocation_prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        stmt = stmt.where(TaskLog.allocation_id.like(escaped + "%", escape="\\"))
    return session.scalars(stmt).all()


def move_checkpoint_storage(session: Session, moves: Mapping[str, str]) -> list[int]:
    """Jobs whose ``shared_fs`` checkpoint storage (what their instances see, as trials do) is
    at (or under) an old path of ``moves`` see the new one from now on; their ids."""
    return move_storage(session, Task, "spec", moves)
