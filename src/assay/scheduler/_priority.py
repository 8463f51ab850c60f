"""Priority scheduling (first version: strict priority order, no preemption yet)."""

from __future__ import annotations

from assay.scheduler._fit import fit
from assay.scheduler._model import Decision, PoolSnapshot


def schedule_priority(pool: PoolSnapshot, now: float) -> Decision:
    """Start pending requests in (priority, queue position, submission) order while they fit.

    A request that does not fit blocks everything behind it, so a big job is not starved by a
    stream of small ones.
    """
    del now
    free = {a.id: list(a.free) for a in pool.agents if a.enabled}
    assign: dict[str, dict[str, tuple[str, ...]]] = {}

    keyed = []
    for req in pool.pending:
        job = pool.jobs[req.job_id]
        keyed.append(
            ((job.priority, job.queue_position, job.submitted, req.submitted, req.id), req)
        )
    keyed.sort(key=lambda kv: kv[0])
    for _, req in keyed:
        if req.slots == 0:
            assign[req.id] = {}
            continue
        placement = fit(req, pool.agents, free, pool.fitting)
        if placement is None:
            break
        for agent_id, slots in placement.items():
            free[agent_id] = [s for s in free[agent_id] if s not in slots]
        assign[req.id] = placement
    return Decision(assign=assign)
