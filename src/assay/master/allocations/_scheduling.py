"""The scheduling pass: build each pool's snapshot, ask the pure policy, carry out its decision."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field

from assay.config import MasterConfig, ResourcePoolConfig, trial_command
from assay.db import (
    Allocation,
    Experiment,
    Job,
    Task,
    TaskInstance,
    Trial,
    allocations,
    checkpoints,
    metrics,
    tasks,
    trials,
)
from assay.master.allocations import _gang as gang
from assay.master.allocations._trial_env import trial_env
from assay.master.experiments import CLUSTER_STOPPED, request_preemption
from assay.master.kernel import (
    AgentView,
    StartAllocation,
    Tx,
    offered_labels,
    request_label,
    trial_container,
    trial_image,
)
from assay.master.queue import job_view
from assay.master.tasks import lifecycle as task_life
from assay.protocol import (
    TASK_TYPE_TRIAL,
    AllocationState,
    ClusterInfo,
    ContextRef,
    PreemptReason,
    SearcherInfo,
    Start,
    TrialEnv,
    TrialInfo,
    TrialState,
)
from assay.scheduler import (
    Agent,
    Decision,
    Fitting,
    Part,
    PolicyKind,
    PoolSnapshot,
    Request,
    Running,
    schedule,
)

TASK_REQUEST = "task:"
"""The prefix of the scheduler request ids of jobs that are not experiments."""


@dataclass
class PassResult:
    started: list[str] = field(default_factory=list)
    preempted: list[str] = field(default_factory=list)
    waiting_jobs: set[str] = field(default_factory=set)
    """Jobs with requests holding a reservation: they start when the preempted slots free."""


def schedule_pass(
    tx: Tx, agents: list[AgentView], settings: MasterConfig, cluster_id: str
) -> PassResult:
    result = PassResult()
    queued = trials.queued(tx.session)
    task_waiting = tasks.waiting(tx.session)
    if not queued and not task_waiting:
        # Nothing to place, so nothing to make room for: what runs is left as it is (the
        # usual pass, once a second, while trials run).
        return result
    live = allocations.live_with_jobs(tx.session)
    task_live = tasks.live_instances(tx.session)
    used: dict[str, set[str]] = {}
    for alloc, _trial, _job in live:
        for agent_id, slot_ids in (alloc.slots or {}).items():
            used.setdefault(agent_id, set()).update(slot_ids)
    for inst, _task, _job in task_live:
        if inst.agent_id:
            used.setdefault(inst.agent_id, set()).update(inst.slots or [])
    views_by_id = {a.id: a for a in agents}
    ports_taken = _ports_by_host(task_live, views_by_id)
    for pool in settings.resource_pools:
        name = pool.pool_name
        pool_agents = [a for a in agents if a.pool == name]
        pool_live = [row for row in live if row[2].pool == name]
        pool_queued = [row for row in queued if row[2].pool == name]
        pool_waiting = [row for row in task_waiting if row[1].pool == name]
        if not pool_queued and not pool_waiting:
            continue
        pool_task_live = [row for row in task_live if row[2].pool == name]
        snapshot = _snapshot(
            tx, pool, pool_agents, used, pool_live, pool_queued, pool_task_live, pool_waiting
        )
        decision: Decision = schedule(snapshot, tx.now)
        candidates = {str(t.id): (t, e) for t, e, _ in pool_queued}
        waiting_tasks = {f"{TASK_REQUEST}{t.id}": t for t, _ in pool_waiting}
        for request_id, assigned in decision.assign.items():
            if request_id in waiting_tasks:
                task = waiting_tasks[request_id]
                parts = decision.parts.get(request_id, ())
                for agent_id, slot_ids in parts:
                    used.setdefault(agent_id, set()).update(slot_ids)
                result.started += _start_task(tx, task, parts, views_by_id, cluster_id, ports_taken)
                continue
            trial, exp = candidates[request_id]
            placement = assigned or _aux_placement(pool_agents, used)
            if placement is None:
                continue
            for agent_id, slot_ids in placement.items():
                used.setdefault(agent_id, set()).update(slot_ids)
            views = {a.id: a for a in pool_agents}
            alloc = start_trial(tx, trial, exp, placement, name, views, cluster_id)
            result.started.append(alloc.id)
        for request_id in decision.reserve:
            if request_id in candidates:
                result.waiting_jobs.add(candidates[request_id][1].job_id)
        allocs = {a.id: a for a, _, _ in pool_live}
        for alloc_id in decision.preempt:
            victim = allocs.get(alloc_id)
            if victim is not None:
                request_preemption(tx, victim, PreemptReason.SCHEDULER)
                result.preempted.append(alloc_id)
    return result


def _ports_by_host(
    task_live: list[tuple[TaskInstance, Task, Job]], views: dict[str, AgentView]
) -> dict[str, set[int]]:
    """Ports held by live job instances, per host address (agents may share a machine)."""
    taken: dict[str, set[int]] = {}
    for inst, _, _ in task_live:
        host = inst.host or (inst.agent_id or "")
        for ports in (inst.ports or {}).values():
            taken.setdefault(host, set()).update(int(p) for p in ports)
    return taken


def _start_task(
    tx: Tx,
    task: Task,
    parts: tuple[tuple[str, tuple[str, ...]], ...],
    views: dict[str, AgentView],
    cluster_id: str,
    ports_taken: dict[str, set[int]],
) -> list[str]:
    waiting = task_life.waiting_instances(tx.session, task.id)
    if len(parts) != len(waiting):
        return []
    placements = [
        task_life.Placement(
            agent_id, slot_ids, views[agent_id].address if agent_id in views else ""
        )
        for agent_id, slot_ids in parts
    ]
    started = task_life.start_instances(tx, task, waiting, placements, cluster_id, ports_taken)
    for inst in waiting:
        for ports in (inst.ports or {}).values():
            ports_taken.setdefault(inst.host, set()).update(int(p) for p in ports)
    return started


def _task_requests(tx: Tx, waiting: list[tuple[Task, Job]]) -> list[Request]:
    out = []
    for task, job in waiting:
        spec = task.spec or {}
        roles = {r["name"]: r for r in spec.get("roles", [])}
        label = request_label(spec.get("agent_label") or None, bool(spec.get("containers")))
        parts = []
        for inst in task_life.waiting_instances(tx.session, task.id):
            role = roles.get(inst.role, {})
            parts.append(
                Part(
                    slots=int(role.get("slots", 0)),
                    cpu=float(role.get("cpu", 0.0)),
                    memory_mb=int(role.get("memory_mb", 0)),
                    label=label,
                )
            )
        if parts:
            out.append(
                Request(
                    id=f"{TASK_REQUEST}{task.id}",
                    job_id=job.id,
                    slots=sum(p.slots for p in parts),
                    submitted=task.created_at,
                    parts=tuple(parts),
                )
            )
    return out


def _snapshot(
    tx: Tx,
    pool: ResourcePoolConfig,
    agents: list[AgentView],
    used: dict[str, set[str]],
    live: list[tuple[Allocation, Trial, Job]],
    queued: list[tuple[Trial, Experiment, Job]],
    task_live: list[tuple[TaskInstance, Task, Job]],
    task_waiting: list[tuple[Task, Job]],
) -> PoolSnapshot:
    jobs = {job.id: job_view(job) for _, _, job in [*live, *queued]}
    for _, _, job in task_live:
        jobs[job.id] = job_view(job)
    for _, job in task_waiting:
        jobs[job.id] = job_view(job)
    pending = []
    for trial, exp, job in queued:
        cfg = tx.searchers.config(exp)
        resources = cfg.resources
        pending.append(
            Request(
                id=str(trial.id),
                job_id=job.id,
                slots=resources.slots_per_trial,
                submitted=trial.created_at,
                label=request_label(resources.agent_label or None, trial_image(cfg) is not None),
                is_single_node=bool(resources.is_single_node),
            )
        )
    pending.extend(_task_requests(tx, task_waiting))
    running = [
        Running(
            id=alloc.id,
            job_id=job.id,
            assignment={k: tuple(v) for k, v in (alloc.slots or {}).items()},
            started=alloc.created_at,
            preempting=alloc.preempt is not None,
        )
        for alloc, _, job in live
    ]
    running.extend(
        Running(
            id=inst.allocation_id or f"{TASK_REQUEST}{inst.id}",
            job_id=job.id,
            assignment={inst.agent_id: tuple(inst.slots or ())} if inst.agent_id else {},
            started=inst.started_at or 0.0,
            usage={inst.agent_id: (inst.cpu, inst.memory_mb)} if inst.agent_id else {},
        )
        for inst, _, job in task_live
    )
    return PoolSnapshot(
        name=pool.pool_name,
        agents=tuple(
            Agent(
                id=a.id,
                slots=tuple(s.id for s in a.slots),
                free=tuple(s.id for s in a.slots if s.id not in used.get(a.id, set())),
                labels=offered_labels(a.labels, a.container_runtime),
                enabled=a.enabled,
                cpu=a.cpu,
                memory_mb=a.memory_mb,
            )
            for a in agents
        ),
        jobs=jobs,
        pending=tuple(pending),
        running=tuple(running),
        policy=PolicyKind(pool.scheduler.type),
        preemption=pool.scheduler.preemption,
        fitting=Fitting(pool.scheduler.fitting_policy),
    )


def _aux_placement(
    agents: list[AgentView], used: dict[str, set[str]]
) -> dict[str, tuple[str, ...]] | None:
    """Zero-slot work still runs somewhere: the enabled agent with the most free slots."""
    candidates = [a for a in agents if a.enabled]
    if not candidates:
        return None
    best = max(candidates, key=lambda a: (len(a.slots) - len(used.get(a.id, set())), a.id))
    return {best.id: ()}


def start_trial(
    tx: Tx,
    trial: Trial,
    exp: Experiment,
    placement: dict[str, tuple[str, ...]],
    pool: str,
    agents: dict[str, AgentView],
    cluster_id: str,
) -> Allocation:
    """Reserve slots for a new run of ``trial`` and tell its agents to start it."""
    trial.runs += 1
    if trial.message == CLUSTER_STOPPED:
        trial.message = ""  # it said when it would resume: now
    checkpoint = (
        checkpoints.get(tx.session, trial.latest_checkpoint) if trial.latest_checkpoint else None
    )
    steps = checkpoint.steps_completed if checkpoint is not None else 0
    if trial.source_checkpoint is not None and trial.latest_checkpoint == trial.source_checkpoint:
        steps = 0
    if trial.runs > 1:  # a first run has no earlier reports to set aside
        metrics.archive_after(tx.session, trial.id, steps, before_run=trial.runs)
    # The new run starts from there: steps trained past it by an earlier run are redone, and
    # the trial's views count from where it stands now, as its (unarchived) metrics do.
    trial.steps_completed = steps
    alloc = allocations.create(
        tx.session,
        allocation_id=f"{trial.id}.{trial.runs}",
        trial_id=trial.id,
        run=trial.runs,
        pool=pool,
        slots={agent_id: list(slots) for agent_id, slots in placement.items()},
        state=AllocationState.ASSIGNED,
        token=secrets.token_urlsafe(24),
        created_at=tx.now,
    )
    trial.state = TrialState.RUNNING
    context = ContextRef(exp.context_id, tx.searchers.context_sha256(tx.session, exp))
    cfg = tx.searchers.config(exp)
    searcher = tx.searchers.searcher(exp)
    layouts = gang.plan(tx, alloc, placement, agents)
    # Every node's address, as Determined gives it, a single node's too.
    addrs = gang.container_addrs(placement, agents)
    nni_env = trial_env(tx.session, exp, trial)
    for rank, (agent_id, slot_ids) in enumerate(sorted(placement.items())):
        agent = agents.get(agent_id)
        slot_views = [s for s in agent.slots if s.id in slot_ids] if agent else []
        info = ClusterInfo(
            # The agent fills in the master's URL as it reaches the master.
            master_url="",
            cluster_id=cluster_id,
            agent_id=agent_id,
            slot_ids=list(slot_ids),
            task_id=f"trial-{trial.id}",
            allocation_id=alloc.id,
            session_token="",
            task_type=TASK_TYPE_TRIAL,
            latest_checkpoint=trial.latest_checkpoint,
            container_addrs=addrs,
            container_rank=rank,
            gpu_uuids=[s.uuid for s in slot_views if s.type == "cuda" and s.uuid],
            trial=TrialInfo(
                trial_id=trial.id,
                experiment_id=exp.id,
                trial_seed=trial.seed,
                hparams=trial.hparams,
                config=exp.config,
                steps_completed=steps,
                trial_run_id=trial.runs,
                restarts=trial.restarts,
            ),
            checkpoint_storage=exp.config.get("checkpoint_storage"),
            searcher=SearcherInfo(
                metric=getattr(cfg.searcher, "metric", None),
                smaller_is_better=getattr(cfg.searcher, "smaller_is_better", True),
                code_driven=searcher.code_driven,
                pending_length=searcher.pending_length(trial.request_id),
            ),
        )
        device = "cuda" if any(s.type == "cuda" for s in slot_views) else "cpu"
        env = cfg.environment.variables(device)
        env.update(nni_env)
        env.update(
            {
                TrialEnv.TRIAL_ID: str(trial.id),
                TrialEnv.EXPERIMENT_ID: str(exp.id),
                TrialEnv.ALLOCATION_ID: alloc.id,
                TrialEnv.TOKEN: alloc.token,
                TrialEnv.TRIAL_SEED: str(trial.seed),
            }
        )
        message = Start(
            allocation_id=alloc.id,
            trial_id=trial.id,
            experiment_id=exp.id,
            run=trial.runs,
            context=context,
            entrypoint=trial_command(cfg.entrypoint, cfg.resources.slots_per_trial),
            env=env,
            slots=list(slot_ids),
            cluster_info=info,
            # native_parallel: the code starts its own processes, as with Determined; no
            # layout tells a launcher where its ranks are.
            distributed=None if cfg.resources.native_parallel else layouts.get(agent_id),
            container=trial_container(cfg, device),
        )
        tx.act(StartAllocation(agent_id, message))
    return alloc
