"""Priority scheduling: strict queue order, backfilling only for preemptible work, and
preemption of work behind the requester in the queue."""

from __future__ import annotations

from assay.scheduler._model import Decision, Part, PoolSnapshot
from assay.scheduler._pass import Pass, Shape
from assay.scheduler._preempt import VictimIndex
from assay.scheduler._queue import priority_key


def schedule_priority(pool: PoolSnapshot, now: float) -> Decision:
    """Start pending requests in queue order: (priority, queue position, submission).

    A request that fits on free slots starts. One that would fit on slots already being given
    back waits for them. Otherwise, with preemption on, it may preempt running allocations of
    jobs *behind* it in the queue: lowest priority (99) first, newest first within a level,
    never a job ahead of it at equal priority, and never more allocations than needed. The
    slots it waits for are held for it; nothing else is placed on them in the pass.

    A request that can be placed in none of these ways blocks everything behind it, so a big
    job is not starved by a stream of small ones; with preemption on, preemptible work may
    still start behind it ("backfilling"), as it can be taken back when the slots are needed.
    A request whose job would exceed its ``max_slots`` is skipped and blocks nothing.

    A gang request (with parts) starts only if all its parts fit on the slots, cores and
    memory free now; otherwise it cannot be placed (and blocks as above). It never waits for
    slots being given back and never preempts: its instances start together or not at all.
    """
    del now
    run = Pass.open(pool)
    pending = run.start_zero_slot()
    jobs = pool.jobs
    pending.sort(key=lambda r: (*priority_key(jobs[r.job_id]), r.submitted, r.id))
    victims: VictimIndex | None = None

    blocked = False
    failed: set[Shape] = set()
    failed_gangs: set[tuple[Part, ...]] = set()
    held = run.held
    for req in pending:
        job = jobs[req.job_id]
        if blocked and not (pool.preemption and job.preemptible):
            continue
        if job.max_slots is not None and held.get(job.id, 0) + req.slots > job.max_slots:
            continue
        if req.parts:
            # A gang starts on what is free now or not at all: it neither waits for slots nor
            # preempts. What is free only shrinks during a pass, so equal parts are not retried.
            if req.parts not in failed_gangs and run.start_gang(req):
                continue
            failed_gangs.add(req.parts)
            blocked = True
            if not pool.preemption:
                break
            continue
        kind = (req.slots, req.label, req.is_single_node)
        if kind in failed:
            continue
        placement = run.state.fit_now(req)
        if placement is not None:
            run.start(req, placement)
            continue
        placement = run.state.fit_soon(req)
        if placement is not None:
            run.wait(req, placement, [])
            continue
        if pool.preemption:
            if victims is None:
                # Built on first need: most passes preempt nothing.
                victims = _victim_index(run)
            chosen = victims.choose(req, priority_key(job))
            if chosen is not None:
                run.wait(req, chosen[1], chosen[0])
                continue
        # The slots on offer only shrink during a pass and the victims a later request may take
        # are a subset of this one's, so every later request of this shape fails too.
        failed.add(kind)
        blocked = True
        if not pool.preemption:
            break
    return run.decision()


def _victim_index(run: Pass) -> VictimIndex:
    """Allocations that may be preempted, in the order victims are taken: lowest priority
    first, newest first within a priority."""
    jobs = run.pool.jobs
    allowed = [
        alloc
        for alloc in run.pool.running
        if not alloc.preempting and alloc.slots and jobs[alloc.job_id].preemptible
    ]
    allowed.sort(key=lambda a: (-jobs[a.job_id].priority, -a.started, a.id))
    return VictimIndex(run.state, allowed, [priority_key(jobs[a.job_id]) for a in allowed])
