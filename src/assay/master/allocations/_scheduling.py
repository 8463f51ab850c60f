"""The scheduling pass: each pool's snapshot made of what every kind of work waits with and
runs, the pure policy's decision, and each placement handed back to the kind that asked for it
(which writes its rows and its Start messages)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from assay.config import MasterConfig, ResourcePoolConfig
from assay.db import owners
from assay.master.kernel import AgentView, AllocationKind, KindPass, PoolWork, Tx, offered_labels
from assay.scheduler import Agent, Decision, Fitting, PolicyKind, PoolSnapshot, schedule


@dataclass
class PassResult:
    started: list[str] = field(default_factory=list)
    preempted: list[str] = field(default_factory=list)
    waiting_jobs: set[str] = field(default_factory=set)
    """Jobs with requests holding a reservation: they start when the preempted slots free."""


def schedule_pass(
    tx: Tx,
    agents: list[AgentView],
    settings: MasterConfig,
    cluster_id: str,
    kinds: Sequence[AllocationKind],
) -> PassResult:
    result = PassResult()
    passes = [kind.begin_pass(tx, cluster_id, agents) for kind in kinds]
    names = {id(share): kind.name for share, kind in zip(passes, kinds, strict=True)}
    if not any(p.waiting for p in passes):
        # Nothing to place, so nothing to make room for: what runs is left as it is (the
        # usual pass, once a second, while trials run).
        return result
    used: dict[str, set[str]] = {}
    for share in passes:
        for agent_id, slot_ids in share.used().items():
            used.setdefault(agent_id, set()).update(slot_ids)
    for pool in settings.resource_pools:
        name = pool.pool_name
        works = [(share, share.pool(name)) for share in passes]
        if not any(work.pending for _, work in works):
            continue
        pool_agents = [a for a in agents if a.pool == name]
        asked = {r.id: share for share, work in works for r in work.pending}
        holding = {r.id: share for share, work in works for r in work.running}
        decision: Decision = schedule(_snapshot(pool, pool_agents, used, works), tx.now)
        for request_id, assigned in decision.assign.items():
            parts = decision.parts.get(request_id, ())
            share = asked[request_id]
            started = share.start(request_id, assigned, parts, pool_agents, used)
            for alloc_id in started:
                # Its kind, written with it: an agent's report names only the allocation.
                owners.record(tx.session, alloc_id, kind=names[id(share)], at=tx.now)
            result.started += started
        for request_id in decision.reserve:
            job_id = asked[request_id].reservation(request_id) if request_id in asked else None
            if job_id is not None:
                result.waiting_jobs.add(job_id)
        for alloc_id in decision.preempt:
            holder = holding.get(alloc_id)
            if holder is not None and holder.preempt(alloc_id):
                result.preempted.append(alloc_id)
    return result


def _snapshot(
    pool: ResourcePoolConfig,
    agents: list[AgentView],
    used: dict[str, set[str]],
    works: list[tuple[KindPass, PoolWork]],
) -> PoolSnapshot:
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
        jobs={job_id: job for _, work in works for job_id, job in work.jobs.items()},
        pending=tuple(r for _, work in works for r in work.pending),
        running=tuple(r for _, work in works for r in work.running),
        policy=PolicyKind(pool.scheduler.type),
        preemption=pool.scheduler.preemption,
        fitting=Fitting(pool.scheduler.fitting_policy),
    )
