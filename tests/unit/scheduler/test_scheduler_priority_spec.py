"""The priority policy replayed against its specification, request by request, with the
reference fit on the slots each request saw.

In queue order (priority, queue position, submission), each request with slots is, exactly:
- skipped if its job would go over ``max_slots``;
- skipped if an earlier request failed, unless preemption is on and its job is preemptible;
- started if it fits on the free slots (on exactly the slots the reference fit picks);
- else waiting if it fits on free slots plus those already being given back (no victims);
- else, with preemption on, waiting with victims: jobs behind it in the queue, preemptible, not
  already giving slots back, such that it fits with them and no longer fits without any one;
- else failed: it fits on none of those, not even with every victim it could have taken.

A gang request (with parts) is skipped and fails as above, but otherwise is started exactly where
:func:`fit_parts` puts its parts on the slots, cores and memory free, or failed: it never waits
nor preempts. A gang with the same parts as one that failed earlier in the pass fails unseen.
"""

from __future__ import annotations

from collections.abc import Iterable

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.scheduler import Part, PolicyKind, PoolSnapshot, Request, Running, fit_parts, schedule
from assay.scheduler._fit import fit
from assay.scheduler._queue import priority_key
from assay.scheduler.testing import snapshots


def _union(*parts: dict[str, set[str]]) -> dict[str, list[str]]:
    out: dict[str, set[str]] = {}
    for part in parts:
        for agent_id, slots in part.items():
            out.setdefault(agent_id, set()).update(slots)
    return {a: sorted(s) for a, s in out.items()}


def _slots(allocs: Iterable[Running], enabled: set[str]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for alloc in allocs:
        for agent_id, slots in alloc.assignment.items():
            if agent_id in enabled:
                out.setdefault(agent_id, set()).update(slots)
    return out


def _remove(state: dict[str, set[str]], placement: dict[str, tuple[str, ...]]) -> None:
    for agent_id, slots in placement.items():
        state.get(agent_id, set()).difference_update(slots)


@settings(max_examples=300, deadline=None)
@given(
    pool=st.one_of(
        snapshots(policy=PolicyKind.PRIORITY),
        snapshots(policy=PolicyKind.PRIORITY, preemption=True, busy=True),
        snapshots(policy=PolicyKind.PRIORITY, gangs=True),
        snapshots(policy=PolicyKind.PRIORITY, preemption=True, busy=True, gangs=True),
    )
)
def test_priority_decision_follows_the_specification_request_by_request(
    pool: PoolSnapshot,
) -> None:
    decision = schedule(pool, now=0.0)
    jobs = pool.jobs
    rank = {j.id: i for i, j in enumerate(sorted(jobs.values(), key=priority_key))}
    enabled = {a.id for a in pool.agents if a.enabled}
    free = {a.id: set(a.free) for a in pool.agents if a.enabled}
    coming = _slots((a for a in pool.running if a.preempting), enabled)
    held: dict[str, int] = {}
    for alloc in pool.running:
        held[alloc.job_id] = held.get(alloc.job_id, 0) + alloc.slots
    chosen: set[str] = set()
    running = {a.id: a for a in pool.running}
    failed = False
    cpu: dict[str, float] = {a.id: a.cpu for a in pool.agents}
    memory: dict[str, float] = {a.id: a.memory_mb for a in pool.agents}
    for alloc in pool.running:
        for agent_id, (cores, mb) in alloc.usage.items():
            cpu[agent_id] -= cores
            memory[agent_id] -= mb
    failed_gangs: set[tuple[Part, ...]] = set()

    order = sorted(
        (r for r in pool.pending if r.slots or r.parts),
        key=lambda r: (rank[r.job_id], r.submitted, r.id),
    )
    for req in order:
        job = jobs[req.job_id]
        placed = req.id in decision.assign or req.id in decision.reserve
        if job.max_slots is not None and held.get(job.id, 0) + req.slots > job.max_slots:
            assert not placed, f"{req.id} goes over max_slots of {job.id}"
            continue
        if failed and not (pool.preemption and job.preemptible):
            assert not placed, f"{req.id} started behind a request that could not be placed"
            continue
        if req.parts:
            assert req.id not in decision.reserve, f"gang {req.id} waits"
            spots = None
            if req.parts not in failed_gangs:
                spots = fit_parts(req.parts, pool.agents, _union(free), cpu, memory, pool.fitting)
            if spots is None:
                assert req.id not in decision.assign, f"gang {req.id} started, not fitting"
                failed_gangs.add(req.parts)
                failed = True
                continue
            assert decision.parts.get(req.id) == tuple(spots), f"gang {req.id} misplaced"
            for part, (agent_id, slot_ids) in zip(req.parts, spots, strict=True):
                free[agent_id].difference_update(slot_ids)
                cpu[agent_id] -= part.cpu
                memory[agent_id] -= part.memory_mb
            held[job.id] = held.get(job.id, 0) + req.slots
            continue
        now_fit = fit(req, pool.agents, _union(free), pool.fitting)
        soon_fit = fit(req, pool.agents, _union(free, coming), pool.fitting)
        if req.id in decision.assign:
            assert decision.assign[req.id] == now_fit
        elif req.id in decision.reserve:
            assert now_fit is None, f"{req.id} waits although it fits now"
            victims = [running[v] for v in decision.victims.get(req.id, ())]
            if not victims:
                assert decision.reserve[req.id] == soon_fit
            else:
                assert soon_fit is None, f"{req.id} preempts although slots are coming back"
                _check_victims(req, victims, pool, rank, chosen)
                with_all = _union(free, coming, _slots(victims, enabled))
                assert decision.reserve[req.id] == fit(req, pool.agents, with_all, pool.fitting)
                for v in victims:
                    others = [o for o in victims if o is not v]
                    without = _union(free, coming, _slots(others, enabled))
                    assert fit(req, pool.agents, without, pool.fitting) is None, (
                        f"victim {v.id} of {req.id} was not needed"
                    )
                for v in victims:
                    chosen.add(v.id)
                    for agent_id, slots in _slots([v], enabled).items():
                        coming.setdefault(agent_id, set()).update(slots)
            _remove(free, decision.reserve[req.id])
            _remove(coming, decision.reserve[req.id])
        else:
            assert now_fit is None and soon_fit is None, f"{req.id} fits but was not placed"
            if pool.preemption:
                could = [
                    a for a in pool.running if _eligible(a, req, pool, rank) and a.id not in chosen
                ]
                every = _union(free, coming, _slots(could, enabled))
                assert fit(req, pool.agents, every, pool.fitting) is None, (
                    f"{req.id} could have been placed by preempting"
                )
            failed = True
            continue
        if req.id in decision.assign:
            _remove(free, decision.assign[req.id])
        held[job.id] = held.get(job.id, 0) + req.slots


def _eligible(alloc: Running, req: Request, pool: PoolSnapshot, rank: dict[str, int]) -> bool:
    return (
        not alloc.preempting
        and pool.jobs[alloc.job_id].preemptible
        and rank[alloc.job_id] > rank[req.job_id]
    )


def _check_victims(
    req: Request,
    victims: list[Running],
    pool: PoolSnapshot,
    rank: dict[str, int],
    chosen: set[str],
) -> None:
    for v in victims:
        assert _eligible(v, req, pool, rank), f"{v.id} may not be preempted for {req.id}"
        assert v.id not in chosen
        assert pool.jobs[v.job_id].priority >= pool.jobs[req.job_id].priority
