"""The job queue as users see and change it: ``assay job list`` and ``assay job update``."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from assay import rest
from assay.config import MasterConfig, load_experiment_config
from assay.db import Experiment, Job, Session, Task, experiments, jobs, trials
from assay.db import tasks as db_tasks
from assay.errors import Conflict, ErrorDetail, InvalidRequest, NotFound
from assay.master.kernel import Reschedule, Tx, trial_image
from assay.master.queue import _room as room
from assay.protocol import ExperimentState, JobState, TaskInstanceState, TrialState
from assay.scheduler import Job as JobView
from assay.scheduler import (
    JobKind,
    JobUpdate,
    PolicyKind,
    move_ahead_of,
    move_behind_of,
    order_jobs,
    validate_batch,
)

if TYPE_CHECKING:
    from assay.master.kernel import AgentView

_ACTIVE = (ExperimentState.ACTIVE, *(s for s in ExperimentState if s.stopping))
_UPDATABLE = (*_ACTIVE, ExperimentState.PAUSED)


def job_view(job: Job) -> JobView:
    """What the scheduler and the queue rules see of a job."""
    kind = JobKind(job.type.lower()) if job.type.lower() in _KINDS else JobKind.EXPERIMENT
    return JobView(
        id=job.id,
        priority=job.priority,
        weight=job.weight,
        queue_position=job.queue_position,
        submitted=job.submitted_at,
        max_slots=job.max_slots,
        # Experiments checkpoint, and a notebook is stopped (Determined's scheduler preempts
        # it too); other jobs' processes would lose their work.
        preemptible=kind in (JobKind.EXPERIMENT, JobKind.NOTEBOOK),
        kind=kind,
        pool=job.pool,
    )


_KINDS = {k.value for k in JobKind}


def policies(settings: MasterConfig) -> dict[str, PolicyKind]:
    return {p.pool_name: PolicyKind(p.scheduler.type) for p in settings.resource_pools}


def agent_room(agent: AgentView) -> room.AgentRoom:
    """What an agent offers, as the wait explanations count."""
    return room.AgentRoom(
        len(agent.slots),
        agent.cpu,
        agent.memory_mb,
        frozenset(agent.labels),
        bool(agent.container_runtime),
    )


def _trial_shape(exp: Experiment) -> room.TrialShape:
    """What each trial asks for, read from the experiment's typed config as the scheduling pass
    reads it when it asks for their slots."""
    cfg = load_experiment_config(exp.config, stored=True)
    resources = cfg.resources
    return room.TrialShape(
        slots=resources.slots_per_trial,
        label=resources.agent_label or None,
        single_node=bool(resources.is_single_node),
        image=trial_image(cfg),
    )


def list_jobs(
    session: Session,
    pool: str,
    settings: MasterConfig,
    waiting: set[str],
    agents: Sequence[room.AgentRoom] = (),
) -> rest.JobQueue:
    """The active jobs of ``pool`` in scheduling order, with their slots and status, and for
    each with work that does not start, why it waits (``agents``: what each connected, enabled
    agent of the pool offers, :func:`agent_room`).

    RUNNING means some of it runs (a trial, an instance, with slots or with none); SCHEDULED
    that slots are reserved for it until the ones it preempted come free; QUEUED that it waits.
    An experiment with trials running and others queued is RUNNING and still says why the
    queued ones wait.
    """
    policy = policies(settings).get(pool)
    if policy is None:
        names = ", ".join(policies(settings))
        raise NotFound(f"resource pool {pool!r} does not exist; this cluster has: {names}")
    rows = jobs.active(session, pool, _ACTIVE)
    task_rows = jobs.active_tasks(session, pool)
    counted = jobs.slot_usage(session, [job.id for job, _ in rows])
    # The typed config is read only for experiments with trials queued: a queue of thousands
    # of running experiments costs no validation.
    shapes = {exp.id: _trial_shape(exp) for job, exp in rows if counted.get(job.id, (0, 0))[1]}
    exp_of = {job.id: exp.id for job, exp in rows}
    usage = {
        job_id: (held, shapes[exp_of[job_id]].slots * n if n else 0)
        for job_id, (held, n) in counted.items()
    }
    usage.update(jobs.task_slot_usage(session, [t for _, t in task_rows]))
    by_id: dict[str, tuple[Job, Experiment | None, Task | None]] = {
        job.id: (job, exp, None) for job, exp in rows
    }
    by_id.update({job.id: (job, None, task) for job, task in task_rows})
    trial_states = trials.counts(session, [exp.id for _, exp in rows])
    running = {job.id for job, exp in rows if trial_states.get(exp.id, {}).get(TrialState.RUNNING)}
    # What waiting instances ask for, and what live ones hold, of cores and memory too.
    needs: dict[str, room.Amounts] = {}
    held = room.Amounts(slots=sum(a for a, _ in usage.values()))
    for job, task_row in task_rows:
        insts = db_tasks.instances(session, task_row.id)
        if any(i.live for i in insts):
            running.add(job.id)
        roles = {r["name"]: r for r in (task_row.spec or {}).get("roles", [])}
        need = room.Amounts()
        for inst in insts:
            if inst.live:
                held = held + room.Amounts(0, inst.cpu or 0.0, inst.memory_mb or 0)
            elif inst.state == TaskInstanceState.WAITING:
                r = roles.get(inst.role, {})
                need = need + room.Amounts(
                    int(r.get("slots", 0)), float(r.get("cpu", 0.0)), int(r.get("memory_mb", 0))
                )
        needs[job.id] = need
    total = room.pool_total(agents)
    free = total - held
    pool_config = settings.pool(pool)
    out = []
    ahead: list[str] = []
    views = [job_view(j) for j, _, _ in by_id.values()]
    for position, view in enumerate(order_jobs(views, policy)):
        job, exp, task = by_id[view.id]
        acquired, queued = usage.get(job.id, (0, 0))
        why = None
        if job.id in running or acquired > 0:
            status = JobState.RUNNING
        else:
            status = JobState.SCHEDULED if job.id in waiting else JobState.QUEUED
        waits = status != JobState.RUNNING if task is not None else queued > 0
        if waits:
            shape = shapes[exp.id] if exp is not None else None
            need = room.Amounts(slots=shape.slots) if shape else needs.get(job.id, room.Amounts())
            why = room.why_waiting(
                room.Queued(
                    need,
                    reserved=status == JobState.SCHEDULED,
                    ahead=tuple(ahead),
                    trial=shape,
                    held=acquired,
                    max_slots=job.max_slots,
                ),
                pool=pool,
                agents=agents,
                total=total,
                free=free,
                pool_type=pool_config.type if pool_config is not None else "agents",
            )
            ahead.append(f"job {task.id}" if task is not None else f"experiment {exp and exp.id}")
        out.append(
            rest.Job(
                position=position,
                id=job.id,
                type=job.type,
                name=job.name,
                experiment_id=exp.id if exp is not None else None,
                task_id=task.id if task is not None else None,
                priority=job.priority,
                weight=job.weight,
                max_slots=job.max_slots,
                submitted_at=job.submitted_at,
                slots_acquired=acquired,
                slots_needed=acquired + queued,
                status=status,
                user=job.owner,
                resource_pool=job.pool,
                waiting=why,
            )
        )
    return rest.JobQueue(resource_pool=pool, scheduler=policy.value, jobs=out)


def waiting_of(
    session: Session,
    job_id: str,
    settings: MasterConfig,
    reserved: set[str],
    agents_of: Callable[[str], Sequence[room.AgentRoom]],
) -> str | None:
    """Why the job's queued work waits, as its row of :func:`list_jobs` says it: what
    ``assay experiment describe`` and the trial views show (``agents_of(pool)``: the pool's
    agents: what the connected, enabled agents of the pool offer, :func:`agent_room` each)."""
    job = jobs.get(session, job_id)
    if job is None or job.done or job.pool not in policies(settings):
        return None
    queue = list_jobs(session, job.pool, settings, reserved, agents_of(job.pool))
    return next((row.waiting for row in queue.jobs if row.id == job_id), None)


def update_jobs(tx: Tx, updates: list[JobUpdate], settings: MasterConfig) -> list[str]:
    """Apply ``updates`` all together or not at all (every problem reported at once)."""
    pools = policies(settings)
    by_id = {job.id: job for job, _ in jobs.active(tx.session, None, _UPDATABLE)}
    by_id.update({job.id: job for job, _ in jobs.active_tasks(tx.session, None)})
    views = {job_id: job_view(job) for job_id, job in by_id.items()}
    validate_batch(updates, views, pools, pools=list(pools))
    for update in updates:
        job = by_id[update.job_id]
        pool = update.resource_pool if update.resource_pool != job.pool else None
        jobs.update(tx.session, job, priority=update.priority, weight=update.weight, pool=pool)
        if pool is not None:
            _set_config(tx, job, "resource_pool", pool)
        anchor = update.ahead_of or update.behind_of
        if anchor is not None:
            current = [job_view(j) for j in by_id.values() if j.pool == job.pool]
            mover = move_ahead_of if update.ahead_of else move_behind_of
            move = mover(current, job.id, anchor)
            jobs.move(
                tx.session,
                job,
                queue_position=move.queue_position,
                priority=move.priority,
                renumbered=[(by_id[i], position) for i, position in move.renumbered.items()],
            )
        views[job.id] = job_view(job)
    tx.act(Reschedule())
    return [u.job_id for u in updates]


RESOURCES = ("priority", "weight", "max_slots")
"""What ``assay experiment set`` (``PATCH /experiments/{id}``) changes."""


def update_experiment_resources(
    tx: Tx, experiment_id: int, changes: Mapping[str, Any], settings: MasterConfig
) -> Experiment:
    """``assay experiment set priority|weight|max-slots``: the same rules as the job queue.

    Every field of ``changes`` is applied, or none: one that is refused refuses them all.
    """
    unknown = sorted(set(changes) - set(RESOURCES))
    if unknown:
        raise InvalidRequest(
            f"{unknown[0]}: not a resource of an experiment; one of: {', '.join(RESOURCES)}"
        )
    for field in ("priority", "weight"):
        if field in changes and changes[field] is None:
            # Only max_slots has a meaning for "none" (no limit).
            raise InvalidRequest(f"{field}: must be a number, got null; leave it out to keep it")
    slots = changes.get("max_slots")
    if slots is not None and (isinstance(slots, bool) or not isinstance(slots, int) or slots < 0):
        # The queue checks priority and weight; this is the one field only this command sets.
        raise InvalidRequest(
            f"max_slots: must be an integer >= 0 or null (no limit), got {slots!r}"
        )
    exp = experiments.require(tx.session, experiment_id)
    if ExperimentState(exp.state).terminal:
        raise Conflict(
            f"experiment {experiment_id} has ended ({exp.state}); its resources can no longer "
            "be changed"
        )
    job = jobs.get(tx.session, exp.job_id)
    assert job is not None
    # Checked together before anything changes, as the queue checks a batch.
    queue = [
        JobUpdate(job_id=job.id, **{f: changes[f]}) for f in ("priority", "weight") if f in changes
    ]
    if queue:
        try:
            update_jobs(tx, queue, settings)
        except (InvalidRequest, NotFound, Conflict) as exc:
            raise _about_experiment(exc, experiment_id, job.id) from None
    for field in RESOURCES:
        if field not in changes:
            continue
        if field == "max_slots":
            jobs.set_max_slots(tx.session, job, max_slots=changes[field])
            tx.act(Reschedule())
        _set_config(tx, job, field, changes[field])
    return exp


def _about_experiment(
    exc: InvalidRequest | NotFound | Conflict, experiment_id: int, job_id: str
) -> InvalidRequest | NotFound | Conflict:
    """The queue's refusal of a batch, reworded for the one experiment it was about: its fields
    by name, not by job id."""
    details = [
        ErrorDetail(
            d.path.removeprefix(f"{job_id}."),
            d.message.replace(f"job {job_id}", f"experiment {experiment_id}"),
        )
        for d in exc.details
    ]
    if details:
        noun = "problem" if len(details) == 1 else "problems"
        message = f"experiment {experiment_id} was not changed: {len(details)} {noun}"
    else:
        message = exc.message.replace(f"job {job_id}", f"experiment {experiment_id}")
    return type(exc)(message, details)


def _set_config(tx: Tx, job: Job, key: str, value: Any) -> None:
    """Keep the experiment's (or task's) shown config in step with its job."""
    task = db_tasks.by_job(tx.session, job.id)
    if task is not None and key == "resource_pool":
        db_tasks.set_spec_pool(tx.session, task, pool=value)
    for exp in experiments.of_job(tx.session, job.id):
        experiments.merge_resources(tx.session, exp, resources={key: value})
        # The cached typed config was parsed from the config as it was before.
        tx.searchers.drop(exp.id)
