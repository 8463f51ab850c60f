"""What users do with jobs that are not experiments: submit one (checked first, every problem at
once, nothing half-created), read it, follow its instances' logs, stop it."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from assay import rest
from assay.config import (
    REGISTRY_AUTH_SECRET,
    JobSpec,
    JobSpecKind,
    MasterConfig,
    resolve_checkpoint_storage,
)
from assay.context import inspect_archive
from assay.db import Session, Task, TaskInstance, TaskLog, contexts, jobs, tasks, users
from assay.db import agents as db_agents
from assay.errors import ErrorDetail, InvalidConfig, NotFound, Unauthorized
from assay.master.identity import Actor
from assay.master.kernel import (
    AgentView,
    LogBatch,
    Orchestrator,
    Tx,
    follow_logs,
    job_in_containers,
    job_label,
    offered_labels,
    runs_containers,
)
from assay.master.queue import room
from assay.master.tasks import _lifecycle as life
from assay.master.tasks._proxied import HTTP_KINDS, TUNNEL_KINDS, ProxyTarget, proxy_target
from assay.protocol import TaskInstanceState, TaskState
from assay.scheduler import DEFAULT_PRIORITY, Agent, Part, never_fits
from assay.storage import LOCAL_STORAGE_TYPES

LOG_PAGE = 5000
SEES_STORAGE = frozenset(
    {JobSpecKind.COMMAND, JobSpecKind.GENERIC, JobSpecKind.NOTEBOOK, JobSpecKind.SHELL}
)
"""The kinds whose instances see the master's checkpoint storage as trials see theirs
(Determined's commands, notebooks and shells do); an OpenPAI job names its own storage."""


class TaskService:
    def __init__(
        self, core: Orchestrator, settings: MasterConfig, agents: Callable[[], list[AgentView]]
    ) -> None:
        self.core = core
        self.settings = settings
        self._agents = agents

    async def submit(self, actor: Actor, spec: JobSpec, context: bytes | None) -> rest.Task:
        """Create the job, owned by ``actor``, in the queue of its pool; ``context`` is a
        tar.gz its instances start in (else an empty directory)."""
        spec = await self.placed(spec)
        if spec.kind in SEES_STORAGE:
            own = resolve_checkpoint_storage(
                None, self.settings.checkpoint_storage, self.core.storage.home
            ).model_dump(mode="json")
            # A file-system storage only: it is what a container needs mounted, and an object
            # store's settings may hold the master's credentials, which a job's spec must not.
            if own.get("type") in LOCAL_STORAGE_TYPES:
                spec = spec.model_copy(update={"checkpoint_storage": own})
        priority = self._priority(spec)
        info = None if context is None else await asyncio.to_thread(inspect_archive, context)

        def handler(tx: Tx) -> rest.Task:
            context_id = None
            if context is not None and info is not None:
                row = contexts.stored(
                    tx.session,
                    sha256=info.sha256,
                    size=info.size,
                    files=info.files,
                    data=context,
                    now=tx.now,
                )
                context_id = row.id
            task = life.create_task(tx, spec, actor.username, context_id, priority)
            return task_view(tx.session, task)

        return await self.core.transact(handler)

    async def resubmit(self, actor: Actor, task_id: int, name: str | None) -> rest.Task:
        """A new job of ``actor``'s, as job ``task_id`` (theirs, or any for an admin) was
        submitted: its spec, secrets and code, checked again where it would run now; named
        ``name``, else as :func:`life.resubmitted_name` says."""
        task_spec, context_id = await self.core.read(
            lambda s: life.resubmittable(s, actor, task_id)
        )
        spec = await self.placed(task_spec)

        def handler(tx: Tx) -> rest.Task:
            named = spec.model_copy(
                update={"name": name or life.resubmitted_name(tx, actor.username, spec)}
            )
            task = life.create_task(tx, named, actor.username, context_id, self._priority(spec))
            return task_view(tx.session, task)

        return await self.core.transact(handler)

    def _priority(self, spec: JobSpec) -> int:
        """The job's priority: its own, else its pool's default."""
        pool = next(p for p in self.settings.resource_pools if p.pool_name == spec.pool)
        return spec.priority if spec.priority is not None else pool.scheduler.default_priority

    def agents(self) -> list[AgentView]:
        """The connected agents, as the scheduler sees them."""
        return self._agents()

    async def proxy_target(
        self, actor: Actor, task_id: int, *, tunnel: bool = False
    ) -> ProxyTarget:
        """Where the master's proxy (or with ``tunnel``, a shell's tunnel) reaches task
        ``task_id`` for ``actor`` (:func:`~assay.master.tasks._proxied.proxy_target`)."""
        kinds = TUNNEL_KINDS if tunnel else HTTP_KINDS
        return await self.core.read(lambda s: proxy_target(s, actor, task_id, kinds))

    async def owner(self, token: str | None) -> Actor:
        """The user a live task run's ``token`` (its ``DET_USER_TOKEN``) acts as where
        Determined's API is served: the task's owner, as a Determined task's token is its
        owner's (assay's own API never takes it). :class:`Unauthorized` for any other token,
        an ended run's, or an owner no longer active."""

        def read(session: Session) -> Actor:
            inst = tasks.live_instance_by_token(session, token) if token else None
            task = tasks.get(session, inst.task_id) if inst is not None else None
            if task is None:
                raise Unauthorized("not the token of a running task")
            user = users.named(session, task.owner)
            if user is None or not user.active:
                raise Unauthorized(f"the owner of task {task.id}, {task.owner}, is not active")
            # No token row of its own: signing out with it ends nothing.
            return Actor(user_id=user.id, username=user.username, admin=user.admin, token_id=0)

        return await self.core.read(read)

    async def placed(self, spec: JobSpec) -> JobSpec:
        """``spec`` in its pool (the default one for its slots when it names none), in
        containers where that pool has agents that run them, or :class:`InvalidConfig` with
        every reason no agent of that pool could ever run it."""
        if not spec.pool:
            slots = any(r.slots for r in spec.roles)
            default = (
                self.settings.default_compute_pool if slots else self.settings.default_aux_pool
            )
            spec = spec.model_copy(update={"pool": default})
        pool = spec.pool
        agents_say = await self.core.read(lambda s: db_agents.pool_runs_containers(s, pool))
        runs = runs_containers(self.settings.pool(pool), agents_say)
        spec = job_in_containers(spec, runs)
        problems = self.problems(spec)
        if problems:
            n = len(problems)
            raise InvalidConfig(
                f"job {spec.name!r} cannot be scheduled here: "
                + (str(problems[0]) if n == 1 else f"{n} problems"),
                problems,
            )
        return spec

    async def validate(self, spec: JobSpec, context: bytes | None) -> rest.TaskValidation:
        """Every check :meth:`submit` makes, creating nothing: the job as it would queue."""
        spec = await self.placed(spec)
        info = None if context is None else await asyncio.to_thread(inspect_archive, context)
        return rest.TaskValidation(
            name=spec.name,
            kind=spec.kind.value,
            source_format=spec.source_format,
            resource_pool=spec.pool,
            roles=[r.name for r in spec.roles],
            instances=sum(r.instances for r in spec.roles),
            notes=list(spec.notes),
            context_files=None if info is None else info.files,
        )

    def problems(self, spec: JobSpec) -> list[ErrorDetail]:
        """What no agent of the job's pool could ever hold, by role and resource."""
        pools = [p.pool_name for p in self.settings.resource_pools]
        if spec.pool not in pools:
            return [
                ErrorDetail(
                    _POOL_KEYS.get(spec.source_format, "resources.resource_pool"),
                    f"resource pool {spec.pool!r} does not exist; this cluster has: "
                    + ", ".join(pools),
                )
            ]
        pool = self.settings.pool(spec.pool)
        if pool is not None and pool.type == "kubernetes" and REGISTRY_AUTH_SECRET in spec.secrets:
            return [
                ErrorDetail(
                    "environment.registry_auth",
                    f"resource pool {spec.pool!r} runs pods, which pull with the image pull "
                    "secrets the pool names (kubernetes.image_pull_secrets in master.yaml); "
                    "leave registry_auth out",
                )
            ]
        agents = [
            Agent(
                id=a.id,
                slots=tuple(s.id for s in a.slots),
                free=tuple(s.id for s in a.slots),
                labels=offered_labels(a.labels, a.container_runtime),
                enabled=a.enabled,
                cpu=a.cpu,
                memory_mb=a.memory_mb,
            )
            for a in self._agents()
            if a.pool == spec.pool
        ]
        if not agents:
            # Nothing connected yet: the job waits for agents, as experiments do.
            return []
        out = []
        for number, role in enumerate(spec.roles):
            part = Part(
                slots=role.slots, cpu=role.cpu, memory_mb=role.memory_mb, label=job_label(spec)
            )
            why = never_fits((part,), agents)
            if why:
                # The scheduler writes amounts with :g; a user wrote 10000000, not 1e+07.
                why = _SCIENTIFIC.sub(lambda m: f"{float(m.group(0)):.0f}", why)
                what = (
                    f"an instance of task role {role.name}"
                    if spec.kind == JobSpecKind.JOB
                    else f"the {spec.kind.value}"
                )
                out.append(
                    ErrorDetail(
                        _resource_path(spec, number, why),
                        f"{what} can never be placed in pool {spec.pool!r}: {why}",
                    )
                )
        if out:
            return out
        # Each instance fits an agent; all of them together may still exceed the pool.
        label = job_label(spec)
        hosts = [a for a in agents if label is None or label in a.labels]
        total = room.pool_total([room.AgentRoom(len(a.slots), a.cpu, a.memory_mb) for a in hosts])
        needs = [
            room.RoleNeed(
                role.name,
                role.instances,
                room.Amounts(role.slots, role.cpu, role.memory_mb),
                _instances_path(spec, number),
            )
            for number, role in enumerate(spec.roles)
        ]
        return [ErrorDetail(path, message) for path, message in room.too_big(needs, total)]

    async def get(self, task_id: int) -> rest.Task:
        def read(session: Session) -> rest.Task:
            return task_view(session, _require(session, task_id))

        return await self.core.read(read)

    async def by_name(self, user: str, name: str) -> rest.Task:
        def read(session: Session) -> rest.Task:
            task = tasks.by_job_name(session, user, name)
            if task is None:
                raise NotFound(f"job {user}~{name} not found")
            return task_view(session, task)

        return await self.core.read(read)

    async def listing(
        self,
        *,
        user: str | None = None,
        active_only: bool = False,
        states: Sequence[str] = (),
        limit: int = 1000,
    ) -> rest.TaskList:
        def read(session: Session) -> rest.TaskList:
            rows = tasks.listing(
                session, owner=user, active_only=active_only, states=states, limit=limit
            )
            return rest.TaskList(tasks=[summary(session, t) for t in rows])

        return await self.core.read(read)

    async def stop(self, actor: Actor, task_id: int) -> rest.Task:
        def handler(tx: Tx) -> rest.Task:
            return task_view(tx.session, life.stop_task(tx, task_id, actor))

        return await self.core.transact(handler)

    async def logs(
        self,
        task_id: int,
        after: int = 0,
        limit: int = LOG_PAGE,
        role: str | None = None,
        index: int | None = None,
    ) -> rest.TaskLogPage:
        batch = await self._logs(task_id, after, limit, role, index)
        return rest.TaskLogPage(logs=batch.entries)

    async def follow_logs(
        self, task_id: int, after: int = 0, role: str | None = None, index: int | None = None
    ) -> AsyncIterator[LogBatch[rest.TaskLogEntry]]:
        """Its instances' lines (of ``role``/``index`` when given) as they come
        (:func:`follow_logs`; ``ended``: the task and every instance have ended). Raises
        :class:`NotFound` at once."""
        return await follow_logs(
            self.core.waiters,
            ("task-logs", task_id),
            lambda last: self._logs(task_id, last, LOG_PAGE, role, index),
            after,
        )

    async def _logs(
        self, task_id: int, after: int, limit: int, role: str | None, index: int | None
    ) -> LogBatch[rest.TaskLogEntry]:
        def read(session: Session) -> LogBatch[rest.TaskLogEntry]:
            task = _require(session, task_id)
            if role is not None:
                _require_instance(task, role, index)
            prefix = None if role is None else life.allocation_prefix(task_id, role, index)
            rows = tasks.logs_after(session, task_id, after, limit, prefix)
            live = any(i.live for i in tasks.instances(session, task_id))
            ended = TaskState(task.state).terminal and not live
            return LogBatch([log_entry(r) for r in rows], ended=ended)

        return await self.core.read(read)

    async def wait_change(self, task_id: int, timeout: float) -> None:
        key = ("task", task_id)
        await asyncio.wait_for(
            self.core.waiters.wait(key, self.core.waiters.version(key), timeout), timeout + 1
        )


_SCIENTIFIC = re.compile(r"\b\d+(?:\.\d+)?e\+\d+\b")
_POOL_KEYS = {"openpai-v2": "defaults.virtualCluster", "openpai-v1": "virtualCluster"}
# What the scheduler's reason names -> the key the user wrote it with, by format.
_RESOURCE_KEYS = {
    "openpai-v2": {"slot": "gpu", "core": "cpu", "memory": "memoryMB"},
    "openpai-v1": {"slot": "gpuNumber", "core": "cpuNumber", "memory": "memoryMB"},
    "determined": {"slot": "slots", "label": "agent_label"},
}


def _resource_path(spec: JobSpec, number: int, why: str) -> str:
    """The key path, as the job file writes it, of the resource ``why`` says cannot fit."""
    resource = next((r for r in ("slot", "core", "memory", "label") if r in why), "")
    role = spec.roles[number]
    if spec.source_format == "openpai-v2":
        base = f"taskRoles.{role.name}.resourcePerInstance"
        key = _RESOURCE_KEYS["openpai-v2"].get(resource)
    elif spec.source_format == "openpai-v1":
        base = f"taskRoles[{number}]"
        key = _RESOURCE_KEYS["openpai-v1"].get(resource)
    else:
        base = "resources"
        key = _RESOURCE_KEYS["determined"].get(resource)
    return f"{base}.{key}" if key else base


def _instances_path(spec: JobSpec, number: int) -> str:
    """The key path, as the job file writes it, of role ``number``'s instance count."""
    if spec.source_format == "openpai-v2":
        return f"taskRoles.{spec.roles[number].name}.instances"
    if spec.source_format == "openpai-v1":
        return f"taskRoles[{number}].taskNumber"
    return "resources"


def _require(session: Session, task_id: int) -> Task:
    task = tasks.get(session, task_id)
    if task is None:
        raise NotFound(f"job {task_id} not found (`assay task list --all` shows every job)")
    return task


def _require_instance(task: Task, role: str, index: int | None) -> None:
    roles = {r["name"]: int(r.get("instances", 1)) for r in (task.spec or {}).get("roles", [])}
    if role not in roles:
        raise NotFound(
            f"job {task.id} has no role {role!r}; its roles are: {', '.join(sorted(roles))}"
        )
    if index is not None and not 0 <= index < roles[role]:
        n = roles[role]
        raise NotFound(
            f"role {role} of job {task.id} has no instance {index}; "
            + ("its only instance is 0" if n == 1 else f"its instances are 0 to {n - 1}")
        )


def log_entry(row: TaskLog) -> rest.TaskLogEntry:
    # task-<id>.<role>.<index>.<run>
    parts = row.allocation_id.split(".")
    role = ".".join(parts[1:-2]) if len(parts) >= 4 else ""
    index = int(parts[-2]) if len(parts) >= 4 and parts[-2].isdigit() else 0
    run = int(parts[-1]) if parts and parts[-1].isdigit() else 0
    return rest.TaskLogEntry(
        id=row.id,
        task_id=row.task_id or 0,
        allocation_id=row.allocation_id,
        role=role,
        index=index,
        run=run,
        stream=row.stream,
        time=row.time,
        line=row.line,
    )


def _instance(inst: TaskInstance) -> rest.TaskInstance:
    return rest.TaskInstance(
        role=inst.role,
        index=inst.index,
        state=TaskInstanceState(inst.state),
        agent_id=inst.agent_id,
        host=inst.host,
        ports={k: [int(p) for p in v] for k, v in (inst.ports or {}).items()},
        slots=[str(s) for s in inst.slots or []],
        exit_code=inst.exit_code,
        retries=inst.retries,
        runs=inst.runs,
        allocation_id=inst.allocation_id,
        started_at=inst.started_at,
        ended_at=inst.ended_at,
        message=inst.message,
    )


def task_view(session: Session, task: Task) -> rest.Task:
    spec = task.spec or {}
    job = jobs.get(session, task.job_id)
    insts: Sequence[TaskInstance] = tasks.instances(session, task.id)
    return rest.Task(
        id=task.id,
        job_id=task.job_id,
        kind=task.kind,
        type=task.kind.upper(),
        name=task.name,
        user=task.owner,
        state=TaskState(task.state),
        source_format=str(spec.get("source_format", "")),
        image=_job_image(spec),
        resource_pool=job.pool if job is not None else str(spec.get("pool", "")),
        priority=job.priority if job is not None else DEFAULT_PRIORITY,
        attempt=task.attempt,
        job_retry_count=int(spec.get("job_retry_count", 0)),
        exit_code=task.exit_code,
        message=task.message,
        notes=list(spec.get("notes", [])),
        parameters=dict(spec.get("parameters", {})),
        secret_names=sorted((task.secrets or {}).keys()),
        has_context=task.context_id is not None,
        created_at=task.created_at,
        started_at=task.started_at,
        ended_at=task.ended_at,
        roles=[
            rest.TaskRole(
                name=r["name"],
                instances=r.get("instances", 1),
                commands=list(r.get("commands", [])),
                slots=r.get("slots", 0),
                cpu=r.get("cpu", 0.0),
                memory_mb=r.get("memory_mb", 0),
                ports=dict(r.get("ports", {})),
                min_failed_instances=r.get("min_failed_instances", 1),
                min_succeeded_instances=r.get("min_succeeded_instances"),
                task_retry_count=r.get("task_retry_count", 0),
                image=r.get("image") or spec.get("image"),
            )
            for r in spec.get("roles", [])
        ],
        instances=[_instance(i) for i in insts],
    )


def _job_image(spec: dict[str, Any]) -> str | None:
    """The job's image: the one it names, else the one all of its roles name (OpenPAI v2
    names images per role); None when the roles name different ones, or none."""
    if spec.get("image"):
        return str(spec["image"])
    images = {r.get("image") for r in spec.get("roles", [])}
    return str(images.pop()) if len(images) == 1 and None not in images else None


def summary(session: Session, task: Task) -> rest.TaskSummary:
    insts = tasks.instances(session, task.id)
    job = jobs.get(session, task.job_id)
    return rest.TaskSummary(
        id=task.id,
        job_id=task.job_id,
        kind=task.kind,
        type=task.kind.upper(),
        name=task.name,
        user=task.owner,
        state=TaskState(task.state),
        resource_pool=job.pool if job is not None else "",
        instances=len(insts),
        running=sum(1 for i in insts if i.live),
        created_at=task.created_at,
        started_at=task.started_at,
        ended_at=task.ended_at,
        exit_code=task.exit_code,
    )
