"""Autoscaling: launch what the queue needs within the limits, terminate what idles."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.errors import InvalidConfig
from assay.scheduler import Instance, ProviderSettings, ScalingDecision, decide_scaling

NOW = 10_000.0


def _provider(**kw: float) -> ProviderSettings:
    base: dict[str, float] = {
        "slots_per_instance": 4,
        "min_instances": 0,
        "max_instances": 5,
        "idle_timeout": 300,
        "startup_timeout": 600,
    }
    base.update(kw)
    return ProviderSettings(**base)  # type: ignore[arg-type]


def test_queued_demand_beyond_free_slots_launches_enough_instances() -> None:
    assert decide_scaling(10, 1, _provider(), [], NOW) == ScalingDecision(launch=3)


def test_instances_still_starting_count_as_coming_capacity() -> None:
    starting = [Instance("i1", launched_at=NOW - 10)]
    assert decide_scaling(6, 0, _provider(), starting, NOW) == ScalingDecision(launch=1)


def test_launches_never_go_over_max_instances() -> None:
    busy = [Instance(f"i{i}", 0.0, agent_id=f"a{i}") for i in range(4)]
    assert decide_scaling(100, 0, _provider(), busy, NOW).launch == 1


def test_min_instances_are_kept_running_without_demand() -> None:
    assert decide_scaling(0, 0, _provider(min_instances=2), [], NOW).launch == 2


def test_instance_idle_past_the_timeout_is_terminated() -> None:
    idle = [Instance("i1", 0.0, agent_id="a1", idle_since=NOW - 301)]
    fresh = [Instance("i2", 0.0, agent_id="a2", idle_since=NOW - 10)]
    decision = decide_scaling(0, 8, _provider(), [*idle, *fresh], NOW)
    assert decision == ScalingDecision(terminate=("i1",))


def test_idle_instances_are_kept_down_to_min_instances() -> None:
    idle = [Instance(f"i{i}", 0.0, agent_id=f"a{i}", idle_since=0.0) for i in range(3)]
    decision = decide_scaling(0, 12, _provider(min_instances=2), idle, NOW)
    assert decision.terminate == ("i0",)


def test_idle_instance_whose_slots_the_queue_needs_is_kept() -> None:
    idle = [Instance("i1", 0.0, agent_id="a1", idle_since=0.0)]
    assert decide_scaling(3, 4, _provider(), idle, NOW) == ScalingDecision()


def test_instance_that_never_connected_is_terminated_and_replaced() -> None:
    stuck = [Instance("i1", launched_at=NOW - 601)]
    assert decide_scaling(4, 0, _provider(), stuck, NOW) == ScalingDecision(1, ("i1",))


def test_lowered_max_instances_terminates_starting_and_idle_but_never_busy_ones() -> None:
    instances = [
        Instance("busy", 0.0, agent_id="a0"),
        Instance("idle", 0.0, agent_id="a1", idle_since=NOW - 1),
        Instance("starting", NOW - 5),
    ]
    decision = decide_scaling(0, 4, _provider(max_instances=1), instances, NOW)
    assert decision == ScalingDecision(terminate=("starting", "idle"))


def test_contradictory_provider_settings_are_refused() -> None:
    with pytest.raises(InvalidConfig, match=r"max_instances \(1\) must be at least min_instances"):
        _provider(min_instances=2, max_instances=1)


instances_st = st.lists(
    st.builds(
        Instance,
        id=st.just(""),
        launched_at=st.floats(0, NOW),
        agent_id=st.sampled_from([None, "agent"]),
        idle_since=st.one_of(st.none(), st.floats(0, NOW)),
    ),
    max_size=8,
).map(
    lambda xs: [
        Instance(f"i{n}", x.launched_at, x.agent_id, x.idle_since) for n, x in enumerate(xs)
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    demand=st.integers(0, 60),
    free=st.integers(0, 40),
    spi=st.integers(1, 8),
    lo=st.integers(0, 3),
    extra=st.integers(0, 6),
    idle_timeout=st.floats(0, 2000),
    startup_timeout=st.floats(0, 2000),
    instances=instances_st,
)
def test_scaling_stays_within_limits_and_never_kills_busy_instances(
    demand: int,
    free: int,
    spi: int,
    lo: int,
    extra: int,
    idle_timeout: float,
    startup_timeout: float,
    instances: list[Instance],
) -> None:
    s = ProviderSettings(spi, lo, lo + extra, idle_timeout, startup_timeout)
    decision = decide_scaling(demand, free, s, instances, NOW)
    by_id = {i.id: i for i in instances}
    gone = set(decision.terminate)
    assert len(gone) == len(decision.terminate) and gone <= set(by_id)
    assert decision.launch >= 0
    for inst in instances:
        stale = inst.agent_id is None and NOW - inst.launched_at >= startup_timeout
        if stale:
            assert inst.id in gone, "an instance that never connected is terminated"
        busy = inst.agent_id is not None and inst.idle_since is None
        if busy:
            assert inst.id not in gone, "busy instances are never terminated"
    alive = [i for i in instances if i.id not in gone]
    busy_count = sum(1 for i in alive if i.agent_id is not None and i.idle_since is None)
    assert len(alive) + decision.launch <= max(s.max_instances, busy_count)
    assert len(alive) + decision.launch >= min(s.min_instances, s.max_instances)
    idle_gone = [by_id[i] for i in gone if by_id[i].agent_id is not None]
    if decision.launch > 0:
        assert len(alive) <= s.max_instances
        starting = sum(1 for i in alive if i.agent_id is None)
        lacking = demand - free - starting * spi
        needed = max(math.ceil(lacking / spi) if lacking > 0 else 0, s.min_instances - len(alive))
        assert decision.launch == min(needed, s.max_instances - len(alive))
    if len(instances) - sum(1 for i in instances if i.id in gone and i.agent_id is None) <= (
        s.max_instances
    ):
        for inst in idle_gone:
            assert inst.idle_since is not None
            assert NOW - inst.idle_since >= idle_timeout, "terminated before its idle timeout"
        if idle_gone:
            assert decision.launch == 0
            assert free - len(idle_gone) * spi >= demand, "terminated slots the queue needs"
