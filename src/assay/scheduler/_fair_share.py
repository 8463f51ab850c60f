"""Fair-share scheduling: every job gets its weighted max-min share of the pool's slots."""

from __future__ import annotations

import heapq
from collections.abc import Iterator

from assay.scheduler._model import Decision, Job, PoolSnapshot, Request, Running
from assay.scheduler._pass import Kind, Pass, shape
from assay.scheduler._queue import queue_key
from assay.scheduler._shares import water_fill, whole_slots
from assay.scheduler._victims import choose_victims


def schedule_fair_share(pool: PoolSnapshot, now: float) -> Decision:
    """Give each job its share of the pool, then lend what is left.

    Targets: progressive filling of the enabled slots by job weight, each job capped by its
    demand (slots it holds plus slots it waits for) and ``max_slots``, never below the slots its
    non-preemptible allocations hold; rounded to whole slots (:func:`slot_targets`).

    First, jobs are served least-served first (slots held per weight), one request at a time,
    as long as the request keeps the job within its target: it starts if it fits, waits for
    slots already being given back, or (with preemption on) preempts allocations of jobs over
    their target, newest first, never more than needed. A job whose request cannot be placed
    this way gets nothing more in this phase.

    Then slots still free go to the requests left over, least-served job first, whatever their
    targets, as long as they fit now. If a request within its job's target could not be placed,
    only preemptible work may take them (and only with preemption on): the slots it lends can
    be taken back, which non-preemptible work could never give.

    A gang request (with parts) counts its parts' slots like any request, but starts only if
    all its parts fit on the slots, cores and memory free now: it never waits for slots being
    given back and never preempts.
    """
    del now
    run = Pass.open(pool)
    pending = run.start_zero_slot()
    jobs = pool.jobs

    # Fair share counts what each job keeps: allocations giving slots back are leaving.
    keeps: dict[str, int] = {}
    floor: dict[str, int] = {}
    for alloc in pool.running:
        if alloc.preempting:
            continue
        slots = alloc.slots
        keeps[alloc.job_id] = keeps.get(alloc.job_id, 0) + slots
        if not jobs[alloc.job_id].preemptible:
            floor[alloc.job_id] = floor.get(alloc.job_id, 0) + slots
    wants: dict[str, list[Request]] = {}
    for req in pending:
        wants.setdefault(req.job_id, []).append(req)
    demand = dict(keeps)
    for job_id, reqs in wants.items():
        if len(reqs) > 1:
            reqs.sort(key=lambda r: (r.submitted, r.id))
        demand[job_id] = demand.get(job_id, 0) + sum(r.slots for r in reqs)
    ids = list(demand)
    caps = [_capped(demand[j], jobs[j].max_slots) for j in ids]
    shares = water_fill(
        sum(run.state.size.values()),
        [jobs[j].weight for j in ids],
        [floor.get(j, 0) for j in ids],
        caps,
    )
    ties = [queue_key(jobs[j]) for j in ids]
    target = dict(
        zip(ids, whole_slots(sum(run.state.size.values()), shares, caps, ties), strict=True)
    )

    victims = _over_target(pool, keeps, target) if pool.preemption else None
    left, starved = _within_targets(run, jobs, wants, keeps=keeps, target=target, victims=victims)
    _lend(run, jobs, left, keeps, starved=starved)
    return run.decision()


def _capped(demand: int, max_slots: int | None) -> int:
    return demand if max_slots is None else min(demand, max_slots)


def _usage(keeps: int, job: Job) -> float:
    return keeps / job.weight if job.weight > 0 else float("inf")


def _within_targets(
    run: Pass,
    jobs: dict[str, Job],
    wants: dict[str, list[Request]],
    *,
    keeps: dict[str, int],
    target: dict[str, int],
    victims: list[Running] | None,
) -> tuple[list[Request], bool]:
    """Serve jobs below their target, least served first; return the requests left over and
    whether some request within its target could not be placed."""
    left: list[Request] = []
    starved = False
    failed: set[Kind] = set()
    taken: set[str] = set()
    # Only jobs that may give slots back in this pass can see what they keep shrink; for every
    # other job a request beyond its target now stays beyond it, so it can be set aside at once.
    shrinking = {v.job_id for v in victims or ()}
    serve: dict[str, list[Request]] = {}
    for job_id, reqs in wants.items():
        room = target.get(job_id, 0) - keeps.get(job_id, 0)
        if len(reqs) == 1 and job_id not in shrinking:
            if reqs[0].slots <= room:
                serve[job_id] = reqs
            else:
                left.append(reqs[0])
            continue
        if job_id in shrinking or all(r.slots <= room for r in reqs):
            serve[job_id] = reqs
            continue
        left.extend(r for r in reqs if r.slots > room)
        kept = [r for r in reqs if r.slots <= room]
        if kept:
            serve[job_id] = kept
    order = sorted(serve, key=lambda j: queue_key(jobs[j]))
    heap = [(_usage(keeps.get(j, 0), jobs[j]), i, j) for i, j in enumerate(order)]
    heapq.heapify(heap)
    wants = serve
    cursor = dict.fromkeys(wants, 0)
    while heap:
        _, job_key, job_id = heapq.heappop(heap)
        job = jobs[job_id]
        reqs = wants[job_id]
        req = reqs[cursor[job_id]]
        cursor[job_id] += 1
        more = cursor[job_id] < len(reqs)
        within = keeps.get(job_id, 0) + req.slots <= target.get(job_id, 0)
        kind: Kind = req.parts or (req.slots, req.label, req.is_single_node)
        if not within or not run.within_max_slots(job, req):
            # Over its target by this request (slots come in requests, targets in slots):
            # it may still be lent free slots later.
            left.append(req)
        elif kind in failed or not _place(run, req, victims, taken, keeps):
            failed.add(kind)
            starved = True
            left.extend(reqs[cursor[job_id] - 1 :])
            more = False
        else:
            keeps[job_id] = keeps.get(job_id, 0) + req.slots
        if more:
            heapq.heappush(heap, (_usage(keeps.get(job_id, 0), job), job_key, job_id))
    return left, starved


def _place(
    run: Pass,
    req: Request,
    victims: list[Running] | None,
    taken: set[str],
    keeps: dict[str, int],
) -> bool:
    if req.parts:
        return run.start_gang(req)
    placement = run.state.fit_now(req)
    if placement is not None:
        run.start(req, placement)
        return True
    placement = run.state.fit_soon(req)
    if placement is not None:
        run.wait(req, placement, [])
        return True
    if victims is None:
        return False
    chosen = choose_victims(req, run.state, _untaken(victims, taken, req.job_id))
    if chosen is None:
        return False
    for victim in chosen[0]:
        taken.add(victim.id)
        keeps[victim.job_id] -= victim.slots
    run.wait(req, chosen[1], chosen[0])
    return True


def _untaken(victims: list[Running], taken: set[str], job_id: str) -> Iterator[Running]:
    for victim in victims:
        if victim.id not in taken and victim.job_id != job_id:
            yield victim


def _over_target(
    pool: PoolSnapshot, keeps: dict[str, int], target: dict[str, int]
) -> list[Running]:
    """Allocations jobs over their target may give back: per job, newest first, each one while
    the job is still over its target before giving it; most over-served jobs first, then the
    job furthest back in the queue."""
    jobs = pool.jobs
    over_by = {
        job_id: held - target.get(job_id, 0)
        for job_id, held in keeps.items()
        if held > target.get(job_id, 0) and jobs[job_id].preemptible
    }
    by_job: dict[str, list[Running]] = {}
    for alloc in pool.running:
        if alloc.job_id in over_by and not alloc.preempting and alloc.slots:
            by_job.setdefault(alloc.job_id, []).append(alloc)
    groups: list[tuple[float, tuple[float, float, str], list[Running]]] = []
    for job_id, allocs in by_job.items():
        over = over_by[job_id]
        allocs.sort(key=lambda a: (-a.started, a.id))
        chosen: list[Running] = []
        given = 0
        for alloc in allocs:
            if given >= over:
                break
            chosen.append(alloc)
            given += alloc.slots
        job = jobs[job_id]
        excess = over / job.weight if job.weight > 0 else float("inf")
        groups.append((excess, queue_key(job), chosen))
    groups.sort(key=lambda g: g[1], reverse=True)
    groups.sort(key=lambda g: g[0], reverse=True)
    return [alloc for _, _, chosen in groups for alloc in chosen]


def _lend(
    run: Pass,
    jobs: dict[str, Job],
    left: list[Request],
    keeps: dict[str, int],
    *,
    starved: bool,
) -> None:
    """Place left-over requests on slots still free, least-served job first."""
    # Zero-slot gangs may still start without a free slot (on cores and memory).
    gangs = run.gangs > 0
    if run.state.free_now == 0 and not gangs:
        return
    failed: set[Kind] = set()
    left.sort(
        key=lambda r: (
            _usage(keeps.get(r.job_id, 0), jobs[r.job_id]),
            queue_key(jobs[r.job_id]),
            r.submitted,
            r.id,
        )
    )
    for req in left:
        job = jobs[req.job_id]
        if starved and not (run.pool.preemption and job.preemptible):
            continue
        if req.parts:
            fits = req.parts not in failed and run.within_max_slots(job, req)
            if fits and not run.start_gang(req):
                failed.add(req.parts)
            continue
        if shape(req) in failed or not run.within_max_slots(job, req):
            continue
        placement = run.state.fit_now(req)
        if placement is None:
            failed.add(shape(req))
            continue
        run.start(req, placement)
        if run.state.free_now == 0 and not gangs:
            return
