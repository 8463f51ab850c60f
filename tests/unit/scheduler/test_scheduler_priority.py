"""Priority scheduling, case by case (the exhaustive replay is in the _spec test)."""

from __future__ import annotations

import pytest

from assay.scheduler import (
    Agent,
    Decision,
    InconsistentSnapshot,
    Job,
    PoolSnapshot,
    Request,
    Running,
    move_ahead_of,
    schedule,
)
from tests.unit.scheduler.scheduler_strategies import agents_of, used


def _pool(
    agents: tuple[Agent, ...],
    jobs: list[Job],
    pending: list[Request],
    running: list[Running] | None = None,
    *,
    preemption: bool = True,
) -> PoolSnapshot:
    return PoolSnapshot(
        name="default",
        agents=agents,
        jobs={j.id: j for j in jobs},
        pending=tuple(pending),
        running=tuple(running or ()),
        preemption=preemption,
    )


def _run(pool: PoolSnapshot) -> Decision:
    return schedule(pool, now=1000.0)


def test_higher_priority_starts_first_when_slots_are_short() -> None:
    pool = _pool(
        agents_of(2),
        [Job("low", priority=50, submitted=1), Job("high", priority=10, submitted=2)],
        [Request("r-low", "low", 2), Request("r-high", "high", 2)],
    )
    assert list(_run(pool).assign) == ["r-high"]


def test_equal_priority_goes_by_queue_position_then_submission() -> None:
    pool = _pool(
        agents_of(1),
        [
            Job("early", submitted=1, queue_position=5),
            Job("moved", submitted=9, queue_position=1),
        ],
        [Request("a", "early", 1), Request("b", "moved", 1)],
    )
    assert list(_run(pool).assign) == ["b"]


def test_request_that_cannot_fit_blocks_non_preemptible_work_behind_it() -> None:
    pool = _pool(
        agents_of(4),
        [Job("big", priority=10), Job("small", priority=20, preemptible=False)],
        [Request("r-big", "big", 8), Request("r-small", "small", 1)],
    )
    assert _run(pool).assign == {}


def test_preemptible_work_backfills_behind_a_blocked_request_when_preemption_is_on() -> None:
    pool = _pool(
        agents_of(4),
        [Job("big", priority=10), Job("small", priority=20)],
        [Request("r-big", "big", 8), Request("r-small", "small", 1)],
    )
    assert list(_run(pool).assign) == ["r-small"]


def test_nothing_backfills_when_preemption_is_off() -> None:
    pool = _pool(
        agents_of(4),
        [Job("big", priority=10), Job("small", priority=20)],
        [Request("r-big", "big", 8), Request("r-small", "small", 1)],
        preemption=False,
    )
    assert _run(pool).assign == {}


def test_preemption_takes_lowest_priority_first_and_newest_first_within_a_level() -> None:
    (agent,) = agents_of(4, busy={0: 4})
    running = [
        Running("mid", "j50", {"a0": used(agent, 1, 0)}, started=5),
        Running("old99", "j99", {"a0": used(agent, 1, 1)}, started=1),
        Running("new99", "j99", {"a0": used(agent, 1, 2)}, started=9),
        Running("other", "j50", {"a0": used(agent, 1, 3)}, started=7),
    ]
    pool = _pool(
        (agent,),
        [Job("urgent", priority=1), Job("j50", priority=50), Job("j99", priority=99)],
        [Request("r1", "urgent", 1), Request("r2", "urgent", 1), Request("r3", "urgent", 1)],
        running,
    )
    decision = _run(pool)
    assert decision.preempt == ("new99", "old99", "other")
    assert decision.victims == {"r1": ("new99",), "r2": ("old99",), "r3": ("other",)}
    assert decision.assign == {}
    assert set(decision.reserve) == {"r1", "r2", "r3"}


def test_only_as_many_victims_as_the_request_needs() -> None:
    (agent,) = agents_of(8, busy={0: 6})
    running = [
        Running("a", "low", {"a0": used(agent, 2, 0)}, started=1),
        Running("b", "low", {"a0": used(agent, 2, 2)}, started=2),
        Running("c", "low", {"a0": used(agent, 2, 4)}, started=3),
    ]
    pool = _pool(
        (agent,),
        [Job("high", priority=1), Job("low", priority=60)],
        [Request("r", "high", 4)],
        running,
    )
    decision = _run(pool)
    assert decision.preempt == ("c",)
    assert decision.reserve == {"r": {"a0": ("a0s4", "a0s5", "a0s6", "a0s7")}}


def test_never_preempts_a_job_ahead_in_the_queue_at_equal_priority() -> None:
    (agent,) = agents_of(1, busy={0: 1})
    pool = _pool(
        (agent,),
        [Job("first", submitted=1), Job("second", submitted=2)],
        [Request("r", "second", 1)],
        [Running("x", "first", {"a0": agent.slots}, started=1)],
    )
    assert _run(pool) == Decision()


def test_never_preempts_higher_priority_or_non_preemptible_work() -> None:
    (agent,) = agents_of(2, busy={0: 2})
    pool = _pool(
        (agent,),
        [Job("mid", priority=30), Job("higher", priority=10), Job("pinned", 90, preemptible=False)],
        [Request("r", "mid", 2)],
        [
            Running("x", "higher", {"a0": used(agent, 1)}),
            Running("y", "pinned", {"a0": used(agent, 1, 1)}),
        ],
    )
    assert _run(pool).preempt == ()


def test_moving_a_job_ahead_at_equal_priority_lets_it_take_the_slot_as_in_the_seed() -> None:
    # `det job update 73853c5c --ahead-of 0d714127`: the moved job gets scheduled and the
    # job that held the slot is queued again.
    (agent,) = agents_of(1, busy={0: 1})
    first = Job("0d714127", submitted=60.0)
    second = Job("73853c5c", submitted=61.0)
    move = move_ahead_of([first, second], second.id, first.id)
    moved = Job(
        second.id, priority=move.priority, submitted=61.0, queue_position=move.queue_position
    )
    pool = _pool(
        (agent,),
        [first, moved],
        [Request("t2", second.id, 1)],
        [Running("t1.1", first.id, {"a0": agent.slots}, started=60.0)],
    )
    decision = _run(pool)
    assert decision.preempt == ("t1.1",)
    assert decision.reserve == {"t2": {"a0": agent.slots}}


def test_waits_for_slots_already_coming_back_instead_of_preempting_more() -> None:
    (agent,) = agents_of(4, busy={0: 4})
    pool = _pool(
        (agent,),
        [Job("high", priority=1), Job("low", priority=90)],
        [Request("r", "high", 2)],
        [
            Running("leaving", "low", {"a0": used(agent, 2)}, started=1, preempting=True),
            Running("staying", "low", {"a0": used(agent, 2, 2)}, started=2),
        ],
    )
    decision = _run(pool)
    assert decision.preempt == ()
    assert decision.reserve == {"r": {"a0": used(agent, 2)}}


def test_slots_coming_back_are_not_promised_twice() -> None:
    (agent,) = agents_of(4, busy={0: 4})
    pool = _pool(
        (agent,),
        [Job("high", priority=1), Job("low", priority=90)],
        [Request("r1", "high", 2), Request("r2", "high", 2)],
        [
            Running("leaving", "low", {"a0": used(agent, 2)}, started=1, preempting=True),
            Running("staying", "low", {"a0": used(agent, 2, 2)}, started=2),
        ],
    )
    decision = _run(pool)
    assert decision.reserve == {"r1": {"a0": used(agent, 2)}, "r2": {"a0": used(agent, 2, 2)}}
    assert decision.victims == {"r2": ("staying",)}


def test_free_slots_of_a_waiting_request_are_not_given_to_work_behind_it() -> None:
    (agent,) = agents_of(8, busy={0: 4})
    pool = _pool(
        (agent,),
        [Job("high", priority=1), Job("low", priority=90), Job("mid", priority=50)],
        [Request("r", "high", 8), Request("later", "mid", 2)],
        [Running("x", "low", {"a0": used(agent, 4)}, started=1)],
    )
    decision = _run(pool)
    assert decision.preempt == ("x",)
    assert decision.reserve == {"r": {"a0": agent.slots}}
    assert "later" not in decision.assign


def test_gang_request_preempts_whole_agents_of_equal_size() -> None:
    agents = agents_of(4, 4, 8, busy={0: 4, 1: 4, 2: 8})
    pool = _pool(
        agents,
        [Job("high", priority=1), Job("low", priority=90), Job("pinned", 90, preemptible=False)],
        [Request("r", "high", 8)],
        [
            Running("x0", "low", {"a0": agents[0].slots}, started=3),
            Running("x1", "low", {"a1": agents[1].slots}, started=2),
            Running("x2", "pinned", {"a2": agents[2].slots}, started=1),
        ],
    )
    decision = _run(pool)
    assert sorted(decision.preempt) == ["x0", "x1"]
    assert decision.reserve == {"r": {"a0": agents[0].slots, "a1": agents[1].slots}}


def test_zero_slot_requests_start_even_when_everything_else_is_blocked() -> None:
    pool = _pool(
        agents_of(1, busy={0: 1}),
        [Job("a", priority=1), Job("b", priority=99)],
        [Request("big", "a", 8), Request("helper", "b", 0)],
        preemption=False,
    )
    assert _run(pool).assign == {"helper": {}}


def test_max_slots_caps_a_job_without_blocking_the_jobs_behind_it() -> None:
    pool = _pool(
        agents_of(4),
        [Job("capped", priority=1, max_slots=2), Job("next", priority=50, preemptible=False)],
        [Request("c1", "capped", 2), Request("c2", "capped", 2), Request("n1", "next", 2)],
        preemption=False,
    )
    assert list(_run(pool).assign) == ["c1", "n1"]


def test_disabled_agents_take_nothing_and_free_nothing_by_preemption() -> None:
    live, off = agents_of(2, 2, busy={0: 2})
    off = Agent(off.id, off.slots, off.free, enabled=False)
    pool = _pool(
        (live, off),
        [Job("high", priority=1), Job("low", priority=90)],
        [Request("r", "high", 2)],
        [Running("x", "low", {"a0": live.slots})],
    )
    decision = _run(pool)
    assert decision.reserve == {"r": {"a0": live.slots}}
    assert decision.preempt == ("x",)


def test_a_request_naming_an_unknown_job_is_refused_with_the_job_and_pool() -> None:
    pool = _pool(agents_of(1), [], [Request("r", "ghost", 1)])
    with pytest.raises(InconsistentSnapshot, match=r"'ghost'.*'default'"):
        _run(pool)
