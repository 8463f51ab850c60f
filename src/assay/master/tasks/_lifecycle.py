"""The lifecycle of jobs that are not experiments, as transaction handlers: creating one,
starting its instances where the scheduler placed them, their starts and exits, retries of an
instance and of the whole job, stopping, and the outcome (rules in ``_task_rules``).

An instance's run is an allocation on one agent whose id reads ``task-<id>.<role>.<index>.<run>``;
the agent runs it like a trial's (its process group, its log lines, its exit) and the gateway
routes what the agent says about it here.
"""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from assay.config import JobSpec, JobSpecKind, TaskRoleSpec, render_commands
from assay.db import Job, Session, Task, TaskInstance, contexts, jobs, tasks
from assay.errors import Conflict, InvalidRequest, NotFound
from assay.master.kernel import KillAllocation, Reschedule, StartAllocation, Tx, Wake, job_container
from assay.master.tasks import _rules as rules
from assay.protocol import (
    ClusterInfo,
    Container,
    ContextRef,
    DetEnv,
    LogEntry,
    Start,
    TaskInstanceState,
    TaskState,
)

log = logging.getLogger(__name__)

ALLOCATION_PREFIX = "task-"
NOTE_PREFIX = "assay master: "
"""How the master's own lines in a job's log begin (what happened to it: a retry, an image)."""
TASK_ID_ENV = "ASSAY_TASK_ID"
"""The task's id, in every instance's environment (TensorBoard's URL prefix names it)."""
SCRIPT_ENV = "ASSAY_INSTANCE_SCRIPT"
"""Carries an instance's script (secrets filled in) to its shell: a process's environment is
its owner's to read, its command line everyone's."""
_ENTRYPOINT = [
    "/bin/bash",
    "-c",
    f'__assay_script="${SCRIPT_ENV}"; unset {SCRIPT_ENV}; eval "$__assay_script"',
]
if TYPE_CHECKING:
    from assay.master.identity import Actor


def allocation_prefix(task_id: int, role: str | None = None, index: int | None = None) -> str:
    prefix = f"{ALLOCATION_PREFIX}{task_id}."
    if role is not None:
        prefix += f"{role}."
        if index is not None:
            prefix += f"{index}."
    return prefix


def stored_spec(task: Task) -> JobSpec:
    """The task's spec with its secrets, as it was submitted."""
    return JobSpec.model_validate({**task.spec, "secrets": dict(task.secrets or {})})


def create_task(tx: Tx, spec: JobSpec, owner: str, context_id: int | None, priority: int) -> Task:
    openpai = spec.kind == JobSpecKind.JOB
    if openpai:
        _check_name_free(tx, owner, spec.name)
    job = jobs.create(
        tx.session,
        job_id=secrets.token_hex(4),
        type=spec.kind.value.upper(),
        name=spec.name,
        pool=spec.pool,
        priority=priority,
        weight=spec.weight,
        max_slots=None,
        submitted_at=tx.now,
        owner=owner,
    )
    task = tasks.create(
        tx.session,
        job=job,
        kind=spec.kind.value,
        name=spec.name,
        owner=owner,
        spec=spec.model_dump(mode="json", exclude={"secrets"}),
        secrets=dict(spec.secrets),
        context_id=context_id,
        roles=[(r.name, r.instances) for r in spec.roles],
        now=tx.now,
        unique_name=openpai,
    )
    tx.act(Reschedule())
    return task


RESUBMITTABLE = frozenset({JobSpecKind.JOB, JobSpecKind.COMMAND, JobSpecKind.GENERIC})
"""Kinds a job of may be submitted again as it was (a notebook's, shell's or TensorBoard's start
makes secrets of its own each time: they are started again with their own commands)."""


def resubmittable(session: Session, actor: Actor, task_id: int) -> tuple[JobSpec, int | None]:
    """Job ``task_id``'s spec with its secrets, and its context, for ``actor`` to submit
    again: :class:`NotFound`, :class:`Forbidden` (another user's, for a non-admin) or
    :class:`InvalidRequest` (a kind that is started anew instead)."""
    task = tasks.get(session, task_id)
    if task is None:
        raise NotFound(f"job {task_id} not found (`assay task list --all` shows every job)")
    actor.require_owner(task.owner, f"{task.kind} {task_id}")
    kind = JobSpecKind(task.kind)
    if kind not in RESUBMITTABLE:
        raise InvalidRequest(
            f"{kind.value} {task_id} is not submitted again: start a new one "
            f"(`assay {kind.value} start`)"
        )
    return stored_spec(task), task.context_id


def resubmitted_name(tx: Tx, owner: str, spec: JobSpec) -> str:
    """The name of ``spec`` submitted again by ``owner``: its own, except for an OpenPAI job,
    whose name is its owner's for good: then its first free ``NAME-2``, ``NAME-3``... (a name
    ending so already counts on from its stem)."""
    if spec.kind != JobSpecKind.JOB:
        return spec.name
    stem = re.sub(r"-\d+$", "", spec.name) or spec.name
    n = 2
    while tasks.by_job_name(tx.session, owner, f"{stem}-{n}") is not None:
        n += 1
    return f"{stem}-{n}"


def _check_name_free(tx: Tx, owner: str, name: str) -> None:
    """OpenPAI's rule: a user's job name names one job, for good (its rest-server answers 409
    ConflictJobError to a name it has, whether that job runs or has ended)."""
    same = tasks.by_job_name(tx.session, owner, name)
    if same is not None:
        raise Conflict(
            f"job name {name!r} is taken by your job {same.id} ({same.state}): {owner}~{name} "
            "names that job for good, as on OpenPAI; give this job another name"
        )


# -- starting -----------------------------------------------------------------------------------


class Placement:
    """Where the scheduler put one instance, and what the agent offers there."""

    def __init__(self, agent_id: str, slot_ids: Sequence[str], address: str) -> None:
        self.agent_id = agent_id
        self.slot_ids = tuple(slot_ids)
        self.address = address


def _container(spec: JobSpec, role: TaskRoleSpec) -> Container | None:
    """The container of the role's instances; None: they run as processes on their agent."""
    image = spec.image_of(role)
    return job_container(spec, image) if spec.containers and image else None


def start_instances(
    tx: Tx,
    task: Task,
    waiting: Sequence[TaskInstance],
    placements: Sequence[Placement],
    cluster_id: str,
    ports_taken: Mapping[str, set[int]],
    port_base: int = rules.PORT_BASE,
) -> list[str]:
    """Start the waiting instances where they were placed (all of them: a gang); their
    allocation ids. ``ports_taken`` (by host address) is updated with the ports given out, the
    lowest free at or above ``port_base``."""
    spec = stored_spec(task)
    everyone = tasks.instances(tx.session, task.id)
    taken: dict[str, set[int]] = {h: set(p) for h, p in ports_taken.items()}
    # Each run's own token, for Determined's clients in it (DET_USER_TOKEN: the owner on
    # Determined's API while the run lives); only its digest is stored.
    run_tokens: dict[int, str] = {}
    for inst, where in zip(waiting, placements, strict=True):
        role = spec.role(inst.role)
        host = where.address or where.agent_id
        used = taken.setdefault(host, set())
        ports = rules.pick_ports(used, rules.instance_ports(role.ports), port_base)
        used.update(p for group in ports.values() for p in group)
        run = inst.runs + 1
        run_tokens[inst.id] = secrets.token_urlsafe(32)
        tasks.start_run(
            tx.session,
            inst,
            run=run,
            allocation_id=f"{ALLOCATION_PREFIX}{task.id}.{inst.role}.{inst.index}.{run}",
            agent_id=where.agent_id,
            host=host,
            slots=where.slot_ids,
            ports=ports,
            cpu=role.cpu,
            memory_mb=role.memory_mb,
            at=tx.now,
            token=run_tokens[inst.id],
        )
    first_start = task.started_at is None
    if task.state == TaskState.WAITING:
        tasks.mark_running(tx.session, task, at=tx.now)
    placed = {
        (i.role, i.index): rules.Placed(i.host, {k: list(v) for k, v in (i.ports or {}).items()})
        for i in everyone
        if i.host
    }
    context = contexts.require(tx.session, task.context_id) if task.context_id else None
    roles = [(r.name, r.instances) for r in spec.roles]
    order = {
        (r.name, i): n
        for n, (r, i) in enumerate((r, i) for r in spec.roles for i in range(r.instances))
    }
    addrs = [placed[k].host if k in placed else "" for k in sorted(order, key=order.__getitem__)]
    started = []
    for inst in waiting:
        role = spec.role(inst.role)
        env = {**spec.env, **role.env}
        env.update(
            rules.pai_env(
                job_name=task.name,
                user=task.owner,
                roles=roles,
                role=inst.role,
                index=inst.index,
                placed=placed,
            )
        )
        env[TASK_ID_ENV] = str(task.id)
        env[SCRIPT_ENV] = rules.instance_script(render_commands(spec, inst.role))
        env.setdefault(DetEnv.USER, task.owner)
        env.setdefault(DetEnv.USER_TOKEN, run_tokens[inst.id])
        assert inst.allocation_id is not None and inst.agent_id is not None
        info = ClusterInfo(
            master_url="",
            cluster_id=cluster_id,
            agent_id=inst.agent_id,
            slot_ids=list(inst.slots),
            task_id=f"{ALLOCATION_PREFIX}{task.id}",
            allocation_id=inst.allocation_id,
            session_token="",
            task_type=task.kind.upper(),
            latest_checkpoint=None,
            container_addrs=addrs,
            container_rank=order[(inst.role, inst.index)],
            checkpoint_storage=spec.checkpoint_storage,
        )
        message = Start(
            allocation_id=inst.allocation_id,
            trial_id=0,
            experiment_id=0,
            run=inst.runs,
            context=None if context is None else ContextRef(context.id, context.sha256),
            entrypoint=list(_ENTRYPOINT),
            env=env,
            slots=list(inst.slots),
            cluster_info=info,
            container=_container(spec, role),
        )
        tx.act(StartAllocation(inst.agent_id, message))
        started.append(inst.allocation_id)
    images = sorted({r.image or spec.image or "" for r in spec.roles} - {""})
    if first_start and images and waiting[0].allocation_id and not spec.containers:
        # Said once, in the job's own log, where its user looks for why it ran as it did.
        line = (
            f"{NOTE_PREFIX}image {', '.join(images)} is recorded; no container runtime is "
            "configured, so the commands run as processes on the agents, with the software "
            "installed there"
        )
        tasks.insert_logs(
            tx.session,
            task.id,
            [LogEntry(waiting[0].allocation_id, 0, line, stream="stderr", time=tx.now)],
        )
    tx.act(Wake(("task", task.id)))
    return started


# -- what agents say ------------------------------------------------------------------------------


def instance_started(tx: Tx, allocation_id: str, agent_id: str, address: str = "") -> None:
    """The instance's process runs; at ``address`` where that is not its agent's (a pod's own
    address, which the proxy then reaches)."""
    inst = tasks.instance_by_allocation(tx.session, allocation_id)
    if inst is None or not inst.live or inst.agent_id != agent_id:
        return
    tasks.mark_started(tx.session, inst, address=address)
    tx.act(Wake(("task", inst.task_id)))


def instance_exit_is_new(session: Session, agent_id: str, allocation_id: str) -> bool:
    """Whether :func:`instance_exited` would record this report (a repeat is not)."""
    inst = tasks.instance_by_allocation(session, allocation_id)
    return inst is not None and inst.live and inst.agent_id == agent_id


def instance_exited(
    tx: Tx, agent_id: str, allocation_id: str, exit_code: int | None, reason: str
) -> None:
    """An instance's process ended (``exit_code`` None: it was lost with its agent)."""
    inst = tasks.instance_by_allocation(tx.session, allocation_id)
    if inst is None or not inst.live or inst.agent_id != agent_id:
        return
    task = tasks.get(tx.session, inst.task_id)
    if task is None:
        return
    spec = stored_spec(task)
    role = spec.role(inst.role)
    lost = exit_code is None
    if (
        inst.kill_requested
        or task.stop_requested
        or task.retrying
        or TaskState(task.state).terminal
    ):
        ended = TaskInstanceState.SUCCEEDED if exit_code == 0 else TaskInstanceState.STOPPED
        message = reason or ("stopped" if ended == TaskInstanceState.STOPPED else "")
        tasks.end_run(
            tx.session, inst, exit_code=exit_code, state=ended, message=message, at=tx.now
        )
    elif exit_code == 0:
        tasks.end_run(
            tx.session,
            inst,
            exit_code=exit_code,
            state=TaskInstanceState.SUCCEEDED,
            message=reason,
            at=tx.now,
        )
    elif inst.retries < role.task_retry_count:
        what = "was lost" if lost else f"failed with exit code {exit_code}"
        tasks.requeue(
            tx.session,
            inst,
            exit_code=exit_code,
            message=(
                f"run {inst.runs} {what}{f' ({reason})' if reason else ''}; "
                f"retry {inst.retries + 1} of {role.task_retry_count}"
            ),
            at=tx.now,
        )
        after = "it was lost with its agent" if lost else f"exit code {exit_code}"
        _say(
            tx,
            task,
            inst.allocation_id,
            f"{NOTE_PREFIX}{inst.role}/{inst.index}: attempt {inst.retries + 1} of "
            f"{role.task_retry_count + 1} starting after {after}",
        )
        tx.act(Reschedule())
    else:
        what = "lost with its agent" if lost else f"exit code {exit_code}"
        tasks.end_run(
            tx.session,
            inst,
            exit_code=exit_code,
            state=TaskInstanceState.FAILED,
            message=f"{what}{f' ({reason})' if reason else ''}",
            at=tx.now,
        )
    settle(tx, task)
    tx.act(Reschedule())
    tx.act(Wake(("task", task.id)))
    # Followers of the logs wait on lines; this may have been the job's last process.
    tx.act(Wake(("task-logs", task.id)))


def settle(tx: Tx, task: Task) -> None:
    """Move the task on from its instances' states: stop, outcome, job retry, done."""
    insts = list(tasks.instances(tx.session, task.id))
    live = [i for i in insts if i.live]
    job = jobs.get(tx.session, task.job_id)
    if task.stop_requested:
        tasks.stop_waiting(tx.session, insts)
        _kill(tx, live)
        if not live:
            _end(tx, task, job, TaskState.STOPPED, task.message or "stopped by its user")
        return
    spec = stored_spec(task)
    if not task.retrying and not TaskState(task.state).terminal:
        roles = [
            rules.RoleRule(r.name, r.instances, r.min_failed_instances, r.min_succeeded_instances)
            for r in spec.roles
        ]
        states: dict[str, list[TaskInstanceState]] = {}
        for inst in insts:
            states.setdefault(inst.role, []).append(TaskInstanceState(inst.state))
        outcome = rules.decide(roles, states)
        if outcome is not None:
            if outcome.state == TaskState.FAILED and task.attempt < spec.job_retry_count:
                tasks.begin_retry(
                    tx.session,
                    task,
                    message=(
                        f"attempt {task.attempt + 1} failed: {outcome.reason}; retrying the job "
                        f"({task.attempt + 1} of {spec.job_retry_count} retries)"
                    ),
                )
            else:
                failed = [i for i in insts if i.state == TaskInstanceState.FAILED]
                code = 0
                if outcome.state == TaskState.FAILED:
                    code = next((i.exit_code for i in failed if i.exit_code), 1)
                reason = _launchers_reason(tx, task, spec) or outcome.reason
                _end(tx, task, job, outcome.state, reason, exit_code=code, done=not live)
            tasks.stop_waiting(tx.session, insts)
            _kill(tx, live)
    if task.retrying and not live:
        # Read before the new attempt clears the instances' outcomes.
        failed_code = next(
            (i.exit_code for i in insts if i.state == TaskInstanceState.FAILED and i.exit_code),
            None,
        )
        tasks.start_attempt(tx.session, task, insts)
        after = (
            f"exit code {failed_code}"
            if failed_code is not None
            else f"attempt {task.attempt} failed"
        )
        if insts:
            _say(
                tx,
                task,
                insts[0].allocation_id,
                f"{NOTE_PREFIX}job attempt {task.attempt + 1} of {spec.job_retry_count + 1} "
                f"starting after {after}",
            )
        tx.act(Reschedule())
    if TaskState(task.state).terminal and not live and job is not None:
        jobs.mark_done(tx.session, job)


def _say(tx: Tx, task: Task, allocation_id: str | None, line: str) -> None:
    """Write ``line`` into the job's log, where its user reads what happened to it."""
    if allocation_id:
        tasks.insert_logs(
            tx.session,
            task.id,
            [LogEntry(allocation_id, 0, line, stream="stderr", time=tx.now)],
        )
        tx.act(Wake(("task-logs", task.id)))


_LAUNCHED = (JobSpecKind.NOTEBOOK, JobSpecKind.SHELL, JobSpecKind.TENSORBOARD)
"""Kinds whose one process is a launcher of assay's, which says why it ends in a line of its
own (idle, JupyterLab missing), clearer than OpenPAI's count of instances."""
LAUNCHER_PREFIX = "assay: "
"""How a launcher's own lines begin (the master's notes begin with :data:`NOTE_PREFIX`)."""


def _launchers_reason(tx: Tx, task: Task, spec: JobSpec) -> str:
    if spec.kind not in _LAUNCHED:
        return ""
    said = tasks.last_said(tx.session, task.id, LAUNCHER_PREFIX)
    return said.removeprefix(LAUNCHER_PREFIX).strip() if said else ""


def _end(
    tx: Tx,
    task: Task,
    job: Job | None,
    state: TaskState,
    message: str,
    *,
    exit_code: int | None = None,
    done: bool = True,
) -> None:
    tasks.end(tx.session, task, state=state, at=tx.now, message=message, exit_code=exit_code)
    if job is not None and done:
        jobs.mark_done(tx.session, job)


def _kill(tx: Tx, live: Sequence[TaskInstance]) -> None:
    for inst in live:
        tasks.request_kill(tx.session, inst)
        if inst.agent_id and inst.allocation_id:
            tx.act(KillAllocation(inst.agent_id, inst.allocation_id))


# -- what users do ---------------------------------------------------------------------------------


def stop_task(tx: Tx, task_id: int, actor: Actor) -> Task:
    task = tasks.get(tx.session, task_id)
    if task is None:
        raise NotFound(f"job {task_id} not found (`assay task list --all` shows every job)")
    actor.require_owner(task.owner, f"{task.kind} {task_id}")
    if TaskState(task.state).terminal:
        raise Conflict(
            f"{task.kind} {task_id} has ended already ({task.state}); there is nothing to stop"
        )
    if task.stop_requested:
        return task
    tasks.request_stop(tx.session, task, message=f"stopped by {actor.username}")
    settle(tx, task)
    tx.act(Wake(("task", task.id)))
    tx.act(Wake(("task-logs", task.id)))
    return task


PREEMPTIBLE_KINDS = frozenset({JobSpecKind.NOTEBOOK.value})
"""Tasks the scheduler may stop for a job of higher priority: nothing of theirs would resume."""


def preempt_task(tx: Tx, task: Task) -> bool:
    """Stop ``task`` for a job of higher priority that needs its slots (its instances get
    their kill grace); False for a kind that is never preempted."""
    if task.kind not in PREEMPTIBLE_KINDS or task.stop_requested:
        return task.stop_requested
    tasks.request_stop(
        tx.session,
        task,
        message=(
            f"preempted: a job of higher priority needed its slots; a {task.kind} keeps no "
            f"state to resume from (`assay {task.kind} start` starts another)"
        ),
    )
    settle(tx, task)
    tx.act(Wake(("task", task.id)))
    tx.act(Wake(("task-logs", task.id)))
    return True


def waiting_instances(session: Any, task_id: int) -> list[TaskInstance]:
    """The task's instances waiting to be placed, in the order of its roles and indices."""
    return [i for i in tasks.instances(session, task_id) if i.state == TaskInstanceState.WAITING]
