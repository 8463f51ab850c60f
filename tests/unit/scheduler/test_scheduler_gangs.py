"""Gang requests (the instances of a job's task roles) under both policies: started whole on
what is free now, or not at all; and the conformance kit's rules for them."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import strategies as st

from assay.scheduler import (
    Agent,
    Decision,
    InconsistentSnapshot,
    Job,
    JobKind,
    Part,
    Policy,
    PolicyKind,
    PoolSnapshot,
    Request,
    Running,
    schedule,
)
from assay.scheduler._fair_share import schedule_fair_share
from assay.scheduler._priority import schedule_priority
from assay.scheduler.testing import PolicyViolation, check_decision, check_policy, snapshots

POLICIES = [PolicyKind.PRIORITY, PolicyKind.FAIR_SHARE]


def _agent(
    agent_id: str, size: int, free: int | None = None, cpu: float = 0.0, memory_mb: int = 0
) -> Agent:
    slots = tuple(f"{agent_id}s{s}" for s in range(size))
    left = size if free is None else free
    return Agent(agent_id, slots, slots[size - left :], cpu=cpu, memory_mb=memory_mb)


def _gang(req_id: str, job_id: str, *parts: Part, submitted: float = 0.0) -> Request:
    return Request(
        req_id, job_id, sum(p.slots for p in parts), submitted=submitted, parts=tuple(parts)
    )


def _job(
    job_id: str,
    priority: int = 42,
    weight: float = 1.0,
    submitted: float = 0.0,
    max_slots: int | None = None,
) -> Job:
    """A job of task roles, as the master makes one: never preempted."""
    return Job(
        job_id,
        priority=priority,
        weight=weight,
        submitted=submitted,
        max_slots=max_slots,
        preemptible=False,
        kind=JobKind.GENERIC,
    )


def _pool(
    agents: list[Agent],
    jobs: list[Job],
    pending: list[Request],
    running: list[Running] | None = None,
    *,
    policy: PolicyKind = PolicyKind.PRIORITY,
    preemption: bool = True,
) -> PoolSnapshot:
    return PoolSnapshot(
        name="default",
        agents=tuple(agents),
        jobs={j.id: j for j in jobs},
        pending=tuple(pending),
        running=tuple(running or ()),
        policy=policy,
        preemption=preemption,
    )


def _run(pool: PoolSnapshot) -> Decision:
    decision = schedule(pool, 0.0)
    check_decision(pool, decision)
    return decision


@pytest.mark.parametrize("policy", POLICIES)
def test_a_gang_starts_whole_with_each_part_on_one_agent(policy: PolicyKind) -> None:
    pool = _pool(
        [_agent("a0", 4), _agent("a1", 4)],
        [_job("j")],
        [_gang("g", "j", Part(4, cpu=2.0), Part(2), Part(0, memory_mb=512))],
        policy=policy,
    )
    decision = _run(pool)
    assert decision.parts == {
        "g": (
            ("a0", ("a0s0", "a0s1", "a0s2", "a0s3")),
            ("a1", ("a1s0", "a1s1")),
            # Best fit: the agent with the fewest free slots takes the part without slots.
            ("a0", ()),
        )
    }
    assert decision.assign == {
        "g": {"a0": ("a0s0", "a0s1", "a0s2", "a0s3"), "a1": ("a1s0", "a1s1")}
    }


@pytest.mark.parametrize("policy", POLICIES)
def test_a_gang_whose_parts_do_not_all_fit_starts_none_and_takes_nothing(
    policy: PolicyKind,
) -> None:
    pool = _pool(
        [_agent("a0", 4), _agent("a1", 4)],
        [_job("j"), Job("exp", submitted=1.0)],
        [_gang("g", "j", Part(4), Part(4), Part(4)), Request("t", "exp", 2, submitted=1.0)],
        policy=policy,
        preemption=False,
    )
    decision = _run(pool)
    assert "g" not in decision.assign and "g" not in decision.parts
    assert decision.reserve == {}
    if policy is PolicyKind.FAIR_SHARE:
        # Fair share lends what the gang could not use (the experiment is within its share).
        assert list(decision.assign) == ["t"]


@pytest.mark.parametrize("policy", POLICIES)
def test_of_two_gangs_that_do_not_both_fit_one_starts_and_the_other_waits(
    policy: PolicyKind,
) -> None:
    pool = _pool(
        [_agent("a0", 4, cpu=16.0, memory_mb=32768)],
        [_job("first", submitted=1.0), _job("second", submitted=2.0)],
        [
            _gang("g1", "first", Part(1, cpu=6.0), Part(1, cpu=6.0)),
            _gang("g2", "second", Part(1, cpu=6.0), Part(1, cpu=6.0)),
        ],
        policy=policy,
    )
    decision = _run(pool)
    assert len(decision.parts) == 1
    assert not decision.reserve and not decision.preempt


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(
    ("part", "starts"),
    [
        (Part(1, cpu=8.0), False),
        (Part(1, memory_mb=10000), False),
        (Part(1, cpu=4.0, memory_mb=8192), True),
    ],
)
def test_cores_and_memory_held_by_running_instances_are_not_given_again(
    policy: PolicyKind, part: Part, starts: bool
) -> None:
    # 4 cores and 8192 MB are left.
    agent = _agent("a0", 4, free=2, cpu=16.0, memory_mb=16384)
    running = Running("x", "old", {"a0": agent.slots[:2]}, usage={"a0": (12.0, 8192)})
    pool = _pool(
        [agent], [_job("old"), _job("j")], [_gang("g", "j", part)], [running], policy=policy
    )
    assert ("g" in _run(pool).parts) == starts


@pytest.mark.parametrize("policy", POLICIES)
def test_a_gang_without_slots_runs_on_an_agent_that_offers_none(policy: PolicyKind) -> None:
    cpu_only = Agent("cpu", (), (), cpu=8.0, memory_mb=16384)
    pool = _pool(
        [cpu_only],
        [_job("j")],
        [_gang("g", "j", Part(0, cpu=4.0, memory_mb=4096), Part(0, cpu=4.0, memory_mb=4096))],
        policy=policy,
    )
    decision = _run(pool)
    assert decision.assign == {"g": {"cpu": ()}}
    assert decision.parts == {"g": (("cpu", ()), ("cpu", ()))}


@pytest.mark.parametrize("policy", POLICIES)
def test_a_gang_without_slots_still_waits_for_cores(policy: PolicyKind) -> None:
    cpu_only = Agent("cpu", (), (), cpu=8.0)
    running = Running("x", "old", {"cpu": ()}, usage={"cpu": (6.0, 0)})
    pool = _pool(
        [cpu_only],
        [_job("old"), _job("j", submitted=1.0)],
        [_gang("g", "j", Part(0, cpu=4.0)), Request("z", "old", 0)],
        [running],
        policy=policy,
    )
    decision = _run(pool)
    # The zero-slot trial request starts at once as always; the gang does not.
    assert decision.assign == {"z": {}}


@pytest.mark.parametrize("policy", POLICIES)
def test_a_gang_neither_waits_for_slots_coming_back_nor_preempts(policy: PolicyKind) -> None:
    agent = _agent("a0", 4, free=0)
    running = [
        Running("leaving", "low", {"a0": agent.slots[:2]}, preempting=True),
        Running("victim", "low", {"a0": agent.slots[2:]}, started=5.0),
    ]
    pool = _pool(
        [agent],
        [Job("low", priority=99, weight=0.1), _job("g", priority=1, weight=10.0)],
        [_gang("gang", "g", Part(2), Part(2))],
        running,
        policy=policy,
    )
    # Under either policy the gang's job is owed the victim's slots.
    assert _run(pool) == Decision()


def test_a_gang_ahead_that_cannot_start_blocks_non_preemptible_experiments_behind_it() -> None:
    pool = _pool(
        [_agent("a0", 4)],
        [_job("g", priority=10), Job("exp", priority=20, preemptible=False)],
        [_gang("gang", "g", Part(4), Part(4)), Request("t", "exp", 1)],
    )
    assert _run(pool).assign == {}


def test_preemptible_experiments_backfill_behind_a_gang_that_cannot_start() -> None:
    pool = _pool(
        [_agent("a0", 4)],
        [_job("g", priority=10), Job("exp", priority=20)],
        [_gang("gang", "g", Part(4), Part(4)), Request("t", "exp", 1)],
    )
    assert list(_run(pool).assign) == ["t"]
    off = dataclasses.replace(pool, preemption=False)
    assert _run(off).assign == {}


def test_an_experiment_ahead_in_the_queue_takes_the_slots_before_a_gang() -> None:
    pool = _pool(
        [_agent("a0", 4), _agent("a1", 4)],
        [Job("exp", priority=10), _job("g", priority=20)],
        [Request("t", "exp", 4), _gang("gang", "g", Part(4), Part(4))],
    )
    decision = _run(pool)
    assert list(decision.assign) == ["t"]


def test_a_gang_ahead_in_the_queue_takes_the_slots_before_experiments() -> None:
    pool = _pool(
        [_agent("a0", 4), _agent("a1", 4)],
        [Job("exp", priority=20), _job("g", priority=10)],
        [Request("t", "exp", 4), _gang("gang", "g", Part(4), Part(2))],
    )
    decision = _run(pool)
    assert list(decision.assign) == ["gang"]
    # The experiment's request waits for nothing either: no slots are coming back.
    assert decision.reserve == {} and decision.preempt == ()


def test_an_urgent_experiment_never_preempts_a_running_gang() -> None:
    agent = _agent("a0", 4, free=0)
    running = Running("inst", "g", {"a0": agent.slots}, usage={"a0": (1.0, 0)})
    pool = _pool(
        [agent],
        [_job("g", priority=99), Job("exp", priority=1)],
        [Request("t", "exp", 4)],
        [running],
    )
    assert _run(pool) == Decision()


def test_a_gang_counts_all_its_slots_against_max_slots() -> None:
    pool = _pool(
        [_agent("a0", 8)],
        [_job("g", max_slots=4), Job("exp", priority=50)],
        [_gang("gang", "g", Part(2), Part(2), Part(2)), Request("t", "exp", 1)],
        preemption=False,
    )
    # Skipped, not blocking: the experiment behind it starts.
    assert list(_run(pool).assign) == ["t"]


def test_fair_share_starts_the_gang_of_a_job_below_its_share_not_one_above() -> None:
    agents = [_agent("a0", 4, free=2), _agent("a1", 4)]
    running = [Running("x", "served", {"a0": agents[0].slots[:2]})]
    pool = _pool(
        agents,
        [_job("served"), _job("starved", submitted=5.0)],
        [
            _gang("g-served", "served", Part(2), Part(2)),
            _gang("g-starved", "starved", Part(2), Part(2)),
        ],
        running,
        policy=PolicyKind.FAIR_SHARE,
    )
    decision = _run(pool)
    assert list(decision.parts) == ["g-starved"]


def test_fair_share_starts_a_cpu_only_gang_when_no_slot_is_free() -> None:
    # The gang's job holds the whole pool, more than its share: its gang is only lent room,
    # which for a gang without slots needs no free slot.
    agent = _agent("a0", 4, free=0, cpu=8.0)
    cpu_only = Agent("cpu", (), (), cpu=4.0)
    running = [Running("x", "g", {"a0": agent.slots})]
    pool = _pool(
        [agent, cpu_only],
        [Job("g", kind=JobKind.GENERIC), Job("exp", submitted=1.0)],
        [_gang("gang", "g", Part(0, cpu=2.0)), Request("t", "exp", 4)],
        running,
        policy=PolicyKind.FAIR_SHARE,
        preemption=False,
    )
    decision = _run(pool)
    assert decision.parts == {"gang": (("cpu", ()),)}


@pytest.mark.parametrize("policy", POLICIES)
def test_a_gang_whose_slots_are_not_the_sum_of_its_parts_is_refused(policy: PolicyKind) -> None:
    wrong = Request("g", "j", 2, parts=(Part(4),))
    pool = _pool([_agent("a0", 4)], [_job("j")], [wrong], policy=policy)
    with pytest.raises(InconsistentSnapshot, match="'g' asks for 2 slots, but its parts for 4"):
        schedule(pool, 0.0)


def _gang_pools() -> st.SearchStrategy[PoolSnapshot]:
    return st.one_of(
        snapshots(gangs=True),
        snapshots(gangs=True, busy=True, preemption=True),
        snapshots(gangs=True, max_agents=3, max_pending=3),
    )


@pytest.mark.parametrize("policy", [schedule_priority, schedule_fair_share])
def test_both_policies_keep_the_kits_rules_in_pools_with_gangs(policy: Policy) -> None:
    check_policy(policy, max_examples=200, strategy=_gang_pools())


def _split(decision: Decision, pool: PoolSnapshot) -> Decision:
    """``decision`` with the last part of every started gang of several parts dropped."""
    parts = dict(decision.parts)
    assign = dict(decision.assign)
    for req_id, spots in decision.parts.items():
        if len(spots) < 2:
            continue
        parts[req_id] = spots[:-1]
        union: dict[str, list[str]] = {}
        for agent_id, slot_ids in spots[:-1]:
            union.setdefault(agent_id, []).extend(slot_ids)
        assign[req_id] = {a: tuple(s) for a, s in union.items()}
    return dataclasses.replace(decision, parts=parts, assign=assign)


def splitting_gangs(pool: PoolSnapshot, now: float) -> Decision:
    return _split(schedule_priority(pool, now), pool)


def ignoring_cores_and_memory(pool: PoolSnapshot, now: float) -> Decision:
    agents = tuple(dataclasses.replace(a, cpu=0.0, memory_mb=0) for a in pool.agents)
    return schedule_priority(dataclasses.replace(pool, agents=agents), now)


def ignoring_what_running_instances_hold(pool: PoolSnapshot, now: float) -> Decision:
    running = tuple(dataclasses.replace(a, usage={}) for a in pool.running)
    return schedule_priority(dataclasses.replace(pool, running=running), now)


def ignoring_the_labels_of_parts(pool: PoolSnapshot, now: float) -> Decision:
    pending = tuple(
        dataclasses.replace(r, parts=tuple(dataclasses.replace(p, label=None) for p in r.parts))
        for r in pool.pending
    )
    return schedule_priority(dataclasses.replace(pool, pending=pending), now)


def making_gangs_wait(pool: PoolSnapshot, now: float) -> Decision:
    decision = schedule_priority(pool, now)
    reserve = dict(decision.reserve)
    assign = dict(decision.assign)
    for req_id in decision.parts:
        reserve[req_id] = assign.pop(req_id)
    return dataclasses.replace(decision, assign=assign, reserve=reserve, parts={})


def not_saying_where_parts_go(pool: PoolSnapshot, now: float) -> Decision:
    return dataclasses.replace(schedule_priority(pool, now), parts={})


def starting_zero_slot_gangs_on_nothing(pool: PoolSnapshot, now: float) -> Decision:
    decision = schedule_priority(pool, now)
    assign = dict(decision.assign)
    for r in pool.pending:
        if r.parts and r.slots == 0:
            assign[r.id] = {}
    return dataclasses.replace(decision, assign=assign)


BROKEN: list[tuple[Policy, str]] = [
    (splitting_gangs, "all or none|not the union"),
    (ignoring_cores_and_memory, "cores|memory"),
    (ignoring_what_running_instances_hold, "cores|memory"),
    (ignoring_the_labels_of_parts, "needs label"),
    (making_gangs_wait, "waits for slots"),
    (not_saying_where_parts_go, "without Decision.parts"),
    (starting_zero_slot_gangs_on_nothing, "without Decision.parts|not the union"),
]


@pytest.mark.parametrize(("policy", "rule"), [pytest.param(p, r, id=p.__name__) for p, r in BROKEN])
def test_the_kit_rejects_a_policy_that_breaks_a_rule_of_gangs(policy: Policy, rule: str) -> None:
    with pytest.raises(PolicyViolation, match=rule):
        check_policy(policy, max_examples=400, strategy=_gang_pools(), shrink=False)
