"""Properties every decision keeps, whatever the policy: no slot handed out twice, none that
does not exist or is not free, none on a disabled agent, placements that obey the fit rules,
zero-slot requests always started, victims that may be preempted."""

from __future__ import annotations

import gc

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.scheduler import Decision, PoolSnapshot, Request, schedule
from tests.unit.scheduler.scheduler_strategies import snapshots


def _check_shape(req: Request, placement: dict[str, tuple[str, ...]], pool: PoolSnapshot) -> None:
    agents = {a.id: a for a in pool.agents}
    assert sum(len(s) for s in placement.values()) == req.slots
    for agent_id in placement:
        agent = agents[agent_id]
        assert agent.enabled, f"{req.id} placed on disabled agent {agent_id}"
        assert req.label is None or req.label in agent.labels
    if len(placement) > 1:
        assert not req.is_single_node
        sizes = {len(agents[a].slots) for a in placement}
        assert len(sizes) == 1, "a gang takes agents with the same slot count"
        for agent_id, slots in placement.items():
            assert sorted(slots) == sorted(agents[agent_id].slots), "a gang takes whole agents"


@settings(max_examples=200, deadline=None)
@given(pool=st.one_of(snapshots(), snapshots(preemption=True, busy=True)))
def test_no_slot_is_handed_out_twice_or_unless_it_is_free_or_coming_back(
    pool: PoolSnapshot,
) -> None:
    decision: Decision = schedule(pool, now=100.0)
    requests = {r.id: r for r in pool.pending}
    free = {(a.id, s) for a in pool.agents for s in a.free}
    exists = {(a.id, s) for a in pool.agents for s in a.slots}
    coming = {
        (agent_id, s)
        for alloc in pool.running
        if alloc.preempting or alloc.id in decision.preempt
        for agent_id, slots in alloc.assignment.items()
        for s in slots
    }
    seen: set[tuple[str, str]] = set()
    for req_id, placement in decision.assign.items():
        _check_shape(requests[req_id], placement, pool)
        for agent_id, slots in placement.items():
            for s in slots:
                assert (agent_id, s) in free, f"{req_id} started on {s}, which is not free"
                assert (agent_id, s) not in seen, f"slot {s} handed out twice"
                seen.add((agent_id, s))
    for req_id, placement in decision.reserve.items():
        assert req_id not in decision.assign
        _check_shape(requests[req_id], placement, pool)
        for agent_id, slots in placement.items():
            for s in slots:
                assert (agent_id, s) in exists
                assert (agent_id, s) in free | coming, f"{req_id} waits for {s}, held for good"
                assert (agent_id, s) not in seen, f"slot {s} handed out twice"
                seen.add((agent_id, s))
    total = sum(len(a.slots) for a in pool.agents if a.enabled)
    assert sum(r.slots for r in requests.values() if r.id in decision.assign) <= total


@settings(max_examples=150, deadline=None)
@given(pool=st.one_of(snapshots(), snapshots(preemption=True, busy=True)))
def test_zero_slot_requests_always_start_and_slot_requests_never_start_on_nothing(
    pool: PoolSnapshot,
) -> None:
    decision = schedule(pool, now=0.0)
    for req in pool.pending:
        if req.slots == 0:
            assert decision.assign.get(req.id) == {}
        else:
            assert decision.assign.get(req.id) != {}


@settings(max_examples=150, deadline=None)
@given(pool=st.one_of(snapshots(), snapshots(preemption=True, busy=True)))
def test_victims_are_running_preemptible_allocations_preempted_once_for_a_waiting_request(
    pool: PoolSnapshot,
) -> None:
    decision = schedule(pool, now=0.0)
    running = {a.id: a for a in pool.running}
    assert len(set(decision.preempt)) == len(decision.preempt)
    if not pool.preemption:
        assert decision.preempt == ()
    listed = [v for vs in decision.victims.values() for v in vs]
    assert sorted(listed) == sorted(decision.preempt)
    for req_id, victims in decision.victims.items():
        assert req_id in decision.reserve
        assert victims
    for alloc_id in decision.preempt:
        alloc = running[alloc_id]
        assert not alloc.preempting, "an allocation already giving slots back is not asked again"
        assert pool.jobs[alloc.job_id].preemptible


def test_a_pass_leaves_the_garbage_collector_as_it_found_it() -> None:
    pool = PoolSnapshot("default", (), {}, (), ())
    assert gc.isenabled()
    schedule(pool, now=0.0)
    assert gc.isenabled()
    gc.disable()
    try:
        schedule(pool, now=0.0)
        assert not gc.isenabled()
    finally:
        gc.enable()
