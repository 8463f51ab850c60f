"""Fair share: max-min shares by weight, and the policy that hands slots out by them."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.scheduler import Job, PolicyKind, PoolSnapshot, Request, Running, schedule
from assay.scheduler._shares import Claim, fair_shares, slot_targets
from assay.scheduler.testing import snapshots
from tests.unit.scheduler.scheduler_strategies import agents_of, used

EPS = 1e-6

claims_st = st.dictionaries(
    st.sampled_from([f"j{i}" for i in range(8)]),
    st.builds(
        Claim,
        weight=st.sampled_from([0.25, 0.5, 1.0, 1.0, 2.0, 3.0, 7.0]),
        cap=st.integers(0, 40),
        floor=st.integers(0, 6),
    ),
    min_size=1,
)


@settings(max_examples=300, deadline=None)
@given(capacity=st.integers(0, 64), claims=claims_st)
def test_fair_shares_are_weighted_max_min_fair(capacity: int, claims: dict[str, Claim]) -> None:
    shares = fair_shares(capacity, claims)
    lo = {k: min(c.floor, c.cap) for k, c in claims.items()}
    total = min(capacity, sum(c.cap for c in claims.values()))
    for k, c in claims.items():
        assert lo[k] - EPS <= shares[k] <= c.cap + EPS
    if sum(lo.values()) >= total:
        assert shares == {k: float(v) for k, v in lo.items()}
        return
    assert math.isclose(sum(shares.values()), total, abs_tol=1e-6)
    # Max-min: a job below its cap is at least as well served (per weight) as any job above
    # its floor; otherwise slots could move from the latter to the former.
    for j, cj in claims.items():
        if shares[j] >= cj.cap - EPS:
            continue
        for k, ck in claims.items():
            if shares[k] <= lo[k] + EPS:
                continue
            assert shares[j] / cj.weight >= shares[k] / ck.weight - 1e-6


@settings(max_examples=300, deadline=None)
@given(capacity=st.integers(0, 64), claims=claims_st)
def test_slot_targets_round_shares_to_whole_slots_without_losing_any(
    capacity: int, claims: dict[str, Claim]
) -> None:
    shares = fair_shares(capacity, claims)
    targets = slot_targets(capacity, claims)
    lo = {k: min(c.floor, c.cap) for k, c in claims.items()}
    for k, c in claims.items():
        assert lo[k] <= targets[k] <= c.cap
        assert abs(targets[k] - shares[k]) < 1
    total = min(capacity, sum(c.cap for c in claims.values()))
    if sum(lo.values()) <= total:
        assert sum(targets.values()) == total


def test_equal_weights_split_the_pool_evenly() -> None:
    claims = {"a": Claim(1.0, cap=100), "b": Claim(1.0, cap=100)}
    assert slot_targets(8, claims) == {"a": 4, "b": 4}


def test_weights_split_the_pool_in_proportion() -> None:
    claims = {"a": Claim(1.0, cap=100), "b": Claim(3.0, cap=100)}
    assert slot_targets(8, claims) == {"a": 2, "b": 6}


def test_what_a_capped_job_cannot_use_goes_to_the_others() -> None:
    claims = {"a": Claim(1.0, cap=1), "b": Claim(1.0, cap=100), "c": Claim(1.0, cap=100)}
    assert fair_shares(9, claims) == {"a": 1.0, "b": 4.0, "c": 4.0}


def test_non_preemptible_slots_are_a_floor_the_share_never_goes_below() -> None:
    claims = {"a": Claim(1.0, cap=8, floor=6), "b": Claim(1.0, cap=8)}
    assert slot_targets(8, claims) == {"a": 6, "b": 2}


def _pool(
    agents: int,
    jobs: list[Job],
    pending: list[Request],
    running: list[Running] | None = None,
    *,
    busy: int = 0,
    preemption: bool = True,
) -> PoolSnapshot:
    return PoolSnapshot(
        name="compute",
        agents=agents_of(agents, busy={0: busy}),
        jobs={j.id: j for j in jobs},
        pending=tuple(pending),
        running=tuple(running or ()),
        policy=PolicyKind.FAIR_SHARE,
        preemption=preemption,
    )


def _reqs(job: str, n: int, slots: int = 1) -> list[Request]:
    return [Request(f"{job}-{i}", job, slots, submitted=float(i)) for i in range(n)]


def _slots_per_job(
    pool: PoolSnapshot, placed: dict[str, dict[str, tuple[str, ...]]]
) -> dict[str, int]:
    by_req = {r.id: r for r in pool.pending}
    out: dict[str, int] = {}
    for req_id, placement in placed.items():
        job = by_req[req_id].job_id
        out[job] = out.get(job, 0) + sum(len(s) for s in placement.values())
    return out


def test_two_equal_jobs_get_half_the_pool_each() -> None:
    pool = _pool(8, [Job("a"), Job("b", submitted=1)], [*_reqs("a", 8), *_reqs("b", 8)])
    decision = schedule(pool, 0.0)
    assert _slots_per_job(pool, decision.assign) == {"a": 4, "b": 4}


def test_weights_decide_the_split_of_a_contended_pool() -> None:
    pool = _pool(8, [Job("a", weight=1.0), Job("b", weight=3.0)], [*_reqs("a", 8), *_reqs("b", 8)])
    assert _slots_per_job(pool, schedule(pool, 0.0).assign) == {"a": 2, "b": 6}


def test_max_slots_caps_a_job_and_the_rest_goes_to_others() -> None:
    pool = _pool(
        8, [Job("a", max_slots=1), Job("b", submitted=1)], [*_reqs("a", 8), *_reqs("b", 8)]
    )
    assert _slots_per_job(pool, schedule(pool, 0.0).assign) == {"a": 1, "b": 7}


def test_slots_nobody_is_owed_are_lent_to_a_job_over_its_share() -> None:
    # b's share is 4 but it only wants 2; a gets its 4 and then is lent the 2 left.
    pool = _pool(8, [Job("a"), Job("b", submitted=1)], [*_reqs("a", 8), *_reqs("b", 2)])
    assert _slots_per_job(pool, schedule(pool, 0.0).assign) == {"a": 6, "b": 2}


def test_over_share_job_gives_back_its_newest_preemptible_slots() -> None:
    agent = agents_of(8)[0]
    running = [
        Running(f"x{i}", "hog", {"a0": used(agent, 1, i)}, started=float(i)) for i in range(8)
    ]
    pool = _pool(8, [Job("hog"), Job("new", submitted=5)], _reqs("new", 4), running, busy=8)
    decision = schedule(pool, 0.0)
    assert sorted(decision.preempt) == ["x4", "x5", "x6", "x7"]
    assert _slots_per_job(pool, decision.reserve) == {"new": 4}


def test_over_share_job_keeps_its_slots_when_preemption_is_off() -> None:
    agent = agents_of(8)[0]
    running = [Running(f"x{i}", "hog", {"a0": used(agent, 1, i)}) for i in range(8)]
    pool = _pool(8, [Job("hog"), Job("new")], _reqs("new", 4), running, busy=8, preemption=False)
    assert schedule(pool, 0.0).preempt == ()


def test_non_preemptible_job_over_its_share_is_never_preempted() -> None:
    agent = agents_of(8)[0]
    running = [Running(f"x{i}", "hog", {"a0": used(agent, 1, i)}) for i in range(8)]
    pool = _pool(8, [Job("hog", preemptible=False), Job("new")], _reqs("new", 4), running, busy=8)
    decision = schedule(pool, 0.0)
    assert decision.preempt == ()
    assert decision.reserve == {}


@settings(max_examples=200, deadline=None)
@given(
    pool=st.one_of(
        snapshots(policy=PolicyKind.FAIR_SHARE),
        snapshots(policy=PolicyKind.FAIR_SHARE, preemption=True, busy=True),
        snapshots(policy=PolicyKind.FAIR_SHARE, preemption=True, busy=True, gangs=True),
    )
)
def test_fair_share_preempts_only_over_share_jobs_and_only_for_jobs_under_theirs(
    pool: PoolSnapshot,
) -> None:
    decision = schedule(pool, 0.0)
    jobs = pool.jobs
    keeps: dict[str, int] = {}
    floor: dict[str, int] = {}
    for a in pool.running:
        if not a.preempting:
            keeps[a.job_id] = keeps.get(a.job_id, 0) + a.slots
            if not jobs[a.job_id].preemptible:
                floor[a.job_id] = floor.get(a.job_id, 0) + a.slots
    demand = dict(keeps)
    for r in pool.pending:
        demand[r.job_id] = demand.get(r.job_id, 0) + r.slots
    capacity = sum(len(a.slots) for a in pool.agents if a.enabled)
    claims = {
        j: Claim(jobs[j].weight, min(d, jobs[j].max_slots or d), floor.get(j, 0))
        for j, d in demand.items()
    }
    order = sorted(claims, key=lambda j: (jobs[j].queue_position, jobs[j].submitted, j))
    target = slot_targets(capacity, claims, order)
    running = {a.id: a for a in pool.running}
    by_job: dict[str, list[Running]] = {}
    for alloc_id in decision.preempt:
        alloc = running[alloc_id]
        by_job.setdefault(alloc.job_id, []).append(alloc)
    for job_id, victims in by_job.items():
        over = keeps[job_id] - target[job_id]
        assert over > 0, f"{job_id} is preempted although it is within its share"
        victims.sort(key=lambda a: (-a.started, a.id))
        assert sum(v.slots for v in victims[:-1]) < over, f"{job_id} gave back too much"
    reserved = _slots_per_job(pool, decision.reserve)
    given = {j: sum(v.slots for v in vs) for j, vs in by_job.items()}
    for job_id, count in reserved.items():
        after = keeps.get(job_id, 0) - given.get(job_id, 0) + count
        assert after <= target[job_id], f"{job_id} waits for slots beyond its share"
    # Work conservation: preemptible work that fits on what is left free was started.
    left = {a.id: set(a.free) for a in pool.agents if a.enabled}
    for placement in [*decision.assign.values(), *decision.reserve.values()]:
        for agent_id, slot_ids in placement.items():
            left[agent_id].difference_update(slot_ids)
    if pool.preemption:
        for r in pool.pending:
            if r.id in decision.assign or r.id in decision.reserve or not r.slots or r.parts:
                continue
            job = jobs[r.job_id]
            if not job.preemptible or job.max_slots is not None:
                continue
            single = [
                a
                for a in pool.agents
                if a.id in left
                and len(left[a.id]) >= r.slots
                and (r.label is None or r.label in a.labels)
            ]
            assert not single, f"{r.id} fits on {single[0].id} but was left queued"
