"""The conformance kit rejects policies that break its rules, each for the rule it breaks,
and accepts a policy that is merely idle."""

from __future__ import annotations

import dataclasses

import pytest

from assay.scheduler import Decision, Placement, Policy, PoolSnapshot
from assay.scheduler._priority import schedule_priority
from assay.scheduler.testing import PolicyViolation, check_decision, check_policy


def _zero_slot_starts(pool: PoolSnapshot) -> dict[str, Placement]:
    return {r.id: {} for r in pool.pending if r.slots == 0 and not r.parts}


def over_committing(pool: PoolSnapshot, now: float) -> Decision:
    """Decides as the priority policy would in the pool with nothing running: it hands out
    slots that allocations hold, and lets jobs outgrow their ``max_slots``."""
    agents = tuple(dataclasses.replace(a, free=a.slots) for a in pool.agents)
    jobs = {k: dataclasses.replace(j, max_slots=None) for k, j in pool.jobs.items()}
    idle = dataclasses.replace(pool, agents=agents, jobs=jobs, running=())
    return schedule_priority(idle, now)


def crashing(pool: PoolSnapshot, now: float) -> Decision:
    if pool.running:
        raise IndexError("list index out of range")
    return schedule_priority(pool, now)


def placing_outside_the_pool(pool: PoolSnapshot, now: float) -> Decision:
    """Decides as the priority policy, then puts the work on another pool's agents."""
    decision = schedule_priority(pool, now)
    moved = {
        req_id: {f"other-{agent_id}": slots for agent_id, slots in placement.items()}
        for req_id, placement in decision.assign.items()
    }
    # A gang's parts move with it: this policy breaks the one rule, not the union of parts
    # (which the kit checks first, and found when an example had a gang).
    parts = {
        req_id: tuple((f"other-{agent_id}", slots) for agent_id, slots in placed)
        for req_id, placed in decision.parts.items()
    }
    return dataclasses.replace(decision, assign=moved, parts=parts)


def ignoring_disabled_agents(pool: PoolSnapshot, now: float) -> Decision:
    agents = tuple(dataclasses.replace(a, enabled=True) for a in pool.agents)
    return schedule_priority(dataclasses.replace(pool, agents=agents), now)


def ignoring_labels(pool: PoolSnapshot, now: float) -> Decision:
    pending = tuple(dataclasses.replace(r, label=None) for r in pool.pending)
    return schedule_priority(dataclasses.replace(pool, pending=pending), now)


def ignoring_max_slots(pool: PoolSnapshot, now: float) -> Decision:
    jobs = {k: dataclasses.replace(j, max_slots=None) for k, j in pool.jobs.items()}
    return schedule_priority(dataclasses.replace(pool, jobs=jobs), now)


def preempting_with_preemption_off(pool: PoolSnapshot, now: float) -> Decision:
    """Decides as the priority policy, then, in pools with preemption off, preempts all it
    could have with it on."""
    decision = schedule_priority(pool, now)
    if pool.preemption:
        return decision
    taken = tuple(
        a.id
        for a in pool.running
        if not a.preempting and pool.jobs[a.job_id].preemptible and a.id not in decision.preempt
    )
    return dataclasses.replace(decision, preempt=decision.preempt + taken)


def preempting_the_unpreemptible(pool: PoolSnapshot, now: float) -> Decision:
    """Decides as the priority policy, then also preempts every non-preemptible allocation."""
    decision = schedule_priority(pool, now)
    if not pool.preemption:
        return decision
    taken = tuple(
        a.id for a in pool.running if not a.preempting and not pool.jobs[a.job_id].preemptible
    )
    return dataclasses.replace(decision, preempt=decision.preempt + taken)


def starving_zero_slot_requests(pool: PoolSnapshot, now: float) -> Decision:
    decision = schedule_priority(pool, now)
    assign = {k: v for k, v in decision.assign.items() if v}
    return dataclasses.replace(decision, assign=assign)


def changing_the_snapshot(pool: PoolSnapshot, now: float) -> Decision:
    decision = schedule_priority(pool, now)
    pool.jobs.clear()
    return decision


class Flipping:
    """Answers alternately with nothing but zero-slot starts and with the priority policy."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, pool: PoolSnapshot, now: float) -> Decision:
        self.calls += 1
        if self.calls % 2:
            return Decision(assign=_zero_slot_starts(pool))
        return schedule_priority(pool, now)


BROKEN: list[tuple[Policy, str]] = [
    (over_committing, "not free|max_slots"),
    (placing_outside_the_pool, "not in the pool"),
    (ignoring_disabled_agents, "disabled agent"),
    (ignoring_labels, "needs label"),
    (ignoring_max_slots, "max_slots"),
    (preempting_with_preemption_off, "preempted with preemption off"),
    (preempting_the_unpreemptible, "not preemptible"),
    (starving_zero_slot_requests, "zero-slot"),
    (changing_the_snapshot, "changed the snapshot"),
    (crashing, "raised IndexError"),
    (Flipping(), "different decision"),
]


@pytest.mark.parametrize(
    ("policy", "rule"),
    [pytest.param(p, r, id=getattr(p, "__name__", type(p).__name__)) for p, r in BROKEN],
)
def test_the_kit_rejects_a_policy_that_breaks_a_rule(policy: Policy, rule: str) -> None:
    with pytest.raises(PolicyViolation, match=rule):
        check_policy(policy, max_examples=300, shrink=False)


def test_the_kit_accepts_an_idle_policy_that_only_starts_zero_slot_requests() -> None:
    check_policy(lambda pool, now: Decision(assign=_zero_slot_starts(pool)), max_examples=50)


def test_a_decision_naming_a_request_the_pool_does_not_have_is_rejected() -> None:
    pool = PoolSnapshot("default", (), {}, (), ())
    with pytest.raises(PolicyViolation, match="not pending in the pool"):
        check_decision(pool, Decision(assign={"r9": {}}))
