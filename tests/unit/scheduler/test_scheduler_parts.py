"""Placing the parts of a gang (the instances of a job's task roles) on agents, and saying when
a pool could never hold them."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.scheduler import Agent, Fitting, Part, fit_parts, never_fits

LABELS = ("gpu", "big")


@st.composite
def _agents(draw: st.DrawFn, max_agents: int = 6) -> list[Agent]:
    agents = []
    for i in range(draw(st.integers(1, max_agents))):
        size = draw(st.sampled_from([0, 1, 2, 4, 4, 8]))
        slots = tuple(f"a{i}s{s}" for s in range(size))
        busy = draw(st.integers(0, size))
        agents.append(
            Agent(
                f"a{i}",
                slots,
                slots[busy:],
                labels=frozenset(draw(st.lists(st.sampled_from(LABELS), max_size=2))),
                enabled=draw(st.sampled_from([True, True, True, False])),
                cpu=draw(st.sampled_from([0.0, 4.0, 8.0, 16.0])),
                memory_mb=draw(st.sampled_from([0, 8192, 32768])),
            )
        )
    return agents


_parts = st.builds(
    Part,
    slots=st.sampled_from([0, 0, 1, 1, 2, 4, 8]),
    cpu=st.sampled_from([0.0, 0.5, 1.0, 2.0, 4.0, 8.0]),
    memory_mb=st.sampled_from([0, 1024, 4096, 16384]),
    label=st.sampled_from([None, None, "gpu"]),
)


@st.composite
def _free(draw: st.DrawFn, agents: list[Agent]) -> tuple[dict[str, float], dict[str, float]]:
    """Free cores and memory per agent: some of what it offers, or (missing) all of it."""
    cpu: dict[str, float] = {}
    memory: dict[str, float] = {}
    for a in agents:
        if draw(st.booleans()):
            cpu[a.id] = a.cpu - draw(st.sampled_from([0.0, 0.5, 2.0, 4.0])) if a.cpu else 0.0
            cpu[a.id] = max(cpu[a.id], 0.0)
            memory[a.id] = max(a.memory_mb - draw(st.sampled_from([0, 1024, 8192])), 0)
    return cpu, memory


def _slots(agents: list[Agent]) -> dict[str, tuple[str, ...]]:
    return {a.id: a.free for a in agents}


def _limit(capacity: float, free: dict[str, float], agent_id: str) -> float:
    return free.get(agent_id, capacity) if capacity > 0 else math.inf


@settings(max_examples=400, deadline=None)
@given(data=st.data(), agents=_agents(), parts=st.lists(_parts, min_size=1, max_size=6))
def test_fit_parts_places_every_part_or_none_and_never_overcommits_an_agent(
    data: st.DataObject, agents: list[Agent], parts: list[Part]
) -> None:
    free_cpu, free_memory = data.draw(_free(agents))
    fitting = data.draw(st.sampled_from(list(Fitting)))
    spots = fit_parts(parts, agents, _slots(agents), free_cpu, free_memory, fitting)
    if spots is None:
        return
    assert len(spots) == len(parts)
    by_id = {a.id: a for a in agents}
    taken: set[tuple[str, str]] = set()
    cpu: dict[str, float] = {}
    memory: dict[str, float] = {}
    for part, (agent_id, slot_ids) in zip(parts, spots, strict=True):
        agent = by_id[agent_id]
        assert agent.enabled
        assert part.label is None or part.label in agent.labels
        assert len(slot_ids) == part.slots
        for s in slot_ids:
            assert s in agent.free
            assert (agent_id, s) not in taken
            taken.add((agent_id, s))
        cpu[agent_id] = cpu.get(agent_id, 0.0) + part.cpu
        memory[agent_id] = memory.get(agent_id, 0) + part.memory_mb
    for agent_id, cores in cpu.items():
        agent = by_id[agent_id]
        assert cores <= _limit(agent.cpu, free_cpu, agent_id) + 1e-9
        assert memory[agent_id] <= _limit(agent.memory_mb, free_memory, agent_id)


def _room_for(
    part: Part, agent: Agent, free_cpu: dict[str, float], free_mem: dict[str, float]
) -> int:
    """How many copies of ``part`` ``agent`` holds on its own (capped at 100)."""
    if not agent.enabled or (part.label is not None and part.label not in agent.labels):
        return 0
    counts = [100]
    if part.slots:
        counts.append(len(agent.free) // part.slots)
    cores = _limit(agent.cpu, free_cpu, agent.id)
    if part.cpu and cores < math.inf:
        counts.append(int(cores // part.cpu))
    memory = _limit(agent.memory_mb, free_mem, agent.id)
    if part.memory_mb and memory < math.inf:
        counts.append(int(memory // part.memory_mb))
    return max(min(counts), 0)


@settings(max_examples=400, deadline=None)
@given(data=st.data(), agents=_agents(), part=_parts, n=st.integers(1, 6))
def test_equal_parts_are_placed_whenever_the_agents_hold_that_many_together(
    data: st.DataObject, agents: list[Agent], part: Part, n: int
) -> None:
    free_cpu, free_memory = data.draw(_free(agents))
    fitting = data.draw(st.sampled_from(list(Fitting)))
    spots = fit_parts([part] * n, agents, _slots(agents), free_cpu, free_memory, fitting)
    room = sum(_room_for(part, a, free_cpu, free_memory) for a in agents)
    assert (spots is not None) == (room >= n)


@settings(max_examples=200, deadline=None)
@given(
    size=st.sampled_from([1, 2, 4, 8]),
    n_agents=st.integers(1, 5),
    part=st.builds(Part, slots=st.integers(0, 8), cpu=st.sampled_from([0.0, 1.0, 3.0])),
    n=st.integers(1, 8),
    fitting=st.sampled_from(list(Fitting)),
)
def test_equal_parts_fill_identical_agents_as_far_as_they_go(
    size: int, n_agents: int, part: Part, n: int, fitting: Fitting
) -> None:
    agents = [
        Agent(f"a{i}", tuple(f"a{i}s{s}" for s in range(size)), (), cpu=8.0)
        for i in range(n_agents)
    ]
    free = {a.id: a.slots for a in agents}
    per_agent = min(
        size // part.slots if part.slots else 100, int(8 // part.cpu) if part.cpu else 100
    )
    spots = fit_parts([part] * n, agents, free, {}, {}, fitting)
    assert (spots is not None) == (per_agent * n_agents >= n)


def _agent(
    agent_id: str,
    size: int,
    free: int | None = None,
    cpu: float = 0.0,
    memory_mb: int = 0,
    labels: frozenset[str] = frozenset(),
    enabled: bool = True,
) -> Agent:
    slots = tuple(f"{agent_id}s{s}" for s in range(size))
    return Agent(
        agent_id,
        slots,
        slots[size - (size if free is None else free) :],
        labels,
        enabled,
        cpu,
        memory_mb,
    )


def _fit(
    parts: list[Part], agents: list[Agent], fitting: Fitting = Fitting.BEST
) -> list[str] | None:
    """Only the agent each part went to."""
    spots = fit_parts(parts, agents, {a.id: a.free for a in agents}, {}, {}, fitting)
    return None if spots is None else [agent_id for agent_id, _ in spots]


def test_best_fit_packs_parts_onto_the_agent_with_fewest_free_slots() -> None:
    agents = [_agent("a0", 8), _agent("a1", 8, free=2), _agent("a2", 8, free=4)]
    assert _fit([Part(2)], agents) == ["a1"]
    assert _fit([Part(3)], agents) == ["a2"]


def test_worst_fit_spreads_parts_onto_the_agent_with_most_free_slots() -> None:
    agents = [_agent("a0", 8, free=4), _agent("a1", 8), _agent("a2", 8, free=2)]
    assert _fit([Part(1), Part(1)], agents, Fitting.WORST) == ["a1", "a1"]
    assert _fit([Part(4), Part(4), Part(4)], agents, Fitting.WORST) == ["a1", "a0", "a1"]


def test_best_fit_then_prefers_the_agent_with_fewest_free_cores() -> None:
    agents = [_agent("a0", 4, cpu=32.0), _agent("a1", 4, cpu=8.0), _agent("a2", 4)]
    assert _fit([Part(1, cpu=2.0)], agents) == ["a1"]
    assert _fit([Part(1, cpu=2.0)], agents, Fitting.WORST) == ["a2"]


def test_bigger_parts_are_placed_first_and_returned_in_the_order_given() -> None:
    # In the order given, worst fit would put the small part on a0 and strand the big one.
    agents = [_agent("a0", 4), _agent("a1", 2)]
    spots = fit_parts(
        [Part(2), Part(4)], agents, {a.id: a.free for a in agents}, {}, {}, Fitting.WORST
    )
    assert spots == [("a1", ("a1s0", "a1s1")), ("a0", ("a0s0", "a0s1", "a0s2", "a0s3"))]


def test_parts_on_one_agent_get_different_slots() -> None:
    agents = [_agent("a0", 4)]
    spots = fit_parts([Part(2), Part(2)], agents, {"a0": agents[0].free}, {}, {}, Fitting.BEST)
    assert spots == [("a0", ("a0s0", "a0s1")), ("a0", ("a0s2", "a0s3"))]


def test_cores_and_memory_of_one_agent_are_shared_by_its_parts() -> None:
    agents = [_agent("a0", 8, cpu=16.0, memory_mb=65536), _agent("a1", 8, cpu=16.0)]
    assert _fit([Part(1, cpu=12.0), Part(1, cpu=12.0)], agents) == ["a0", "a1"]
    assert _fit([Part(1, cpu=12.0)] * 3, agents) is None
    free = {a.id: a.free for a in agents}
    spots = fit_parts([Part(1, memory_mb=40000)], agents, free, {}, {"a0": 30000}, Fitting.BEST)
    # a0 has 30000 MB left; a1 did not say, so its memory is unlimited.
    assert spots is not None and spots[0][0] == "a1"


def test_cpu_only_parts_go_to_agents_without_slots() -> None:
    agents = [_agent("gpu", 4), _agent("cpu", 0, cpu=8.0)]
    assert _fit([Part(0, cpu=4.0), Part(0, cpu=4.0)], agents) == ["cpu", "cpu"]
    assert _fit([Part(0, cpu=4.0)] * 3, agents) == ["cpu", "cpu", "gpu"]


def test_parts_go_only_to_enabled_agents_carrying_their_label() -> None:
    agents = [
        _agent("a0", 4),
        _agent("a1", 4, labels=frozenset({"gpu"}), enabled=False),
        _agent("a2", 4, labels=frozenset({"gpu"})),
    ]
    assert _fit([Part(1, label="gpu"), Part(4)], agents) == ["a2", "a0"]
    assert _fit([Part(1, label="gpu")] * 5, agents) is None


def test_fractional_cores_add_up_to_what_the_agent_offers() -> None:
    agents = [_agent("a0", 0, cpu=0.3)]
    assert _fit([Part(0, cpu=0.1), Part(0, cpu=0.2)], agents) == ["a0", "a0"]


def test_an_instance_bigger_than_every_agent_is_named_with_its_resource() -> None:
    agents = [_agent("a0", 8, cpu=16.0, memory_mb=65536), _agent("a1", 4, cpu=8.0, memory_mb=1024)]
    assert (
        never_fits([Part(1, cpu=64.0)], agents)
        == "instance needs 64 cores; the largest agent has 16"
    )
    assert never_fits([Part(16)], agents) == "instance needs 16 slots; the largest agent has 8"
    assert (
        never_fits([Part(0, memory_mb=100000)], agents)
        == "instance needs 100000 MB of memory; the largest agent has 65536 MB"
    )
    assert never_fits([Part(8, cpu=1.0)], agents) is None


def test_an_instance_needing_more_than_any_one_agent_has_at_once_is_refused() -> None:
    agents = [_agent("a0", 8, cpu=4.0), _agent("a1", 0, cpu=64.0)]
    assert never_fits([Part(8, cpu=16.0)], agents) == (
        "instance needs 8 slots and 16 cores on one agent; no agent has all of them"
    )


def test_an_instance_needing_a_label_no_agent_carries_is_refused() -> None:
    agents = [_agent("a0", 8, labels=frozenset({"gpu"})), _agent("a1", 16)]
    assert never_fits([Part(1, label="a100")], agents) == (
        "instance needs an agent with label 'a100'; no agent carries it"
    )
    assert never_fits([Part(16, label="gpu")], agents) == (
        "instance needs 16 slots; the largest agent with label 'gpu' has 8"
    )


def test_instances_needing_more_together_than_the_agents_have_are_refused() -> None:
    agents = [_agent("a0", 8, cpu=16.0), _agent("a1", 8, cpu=16.0, labels=frozenset({"gpu"}))]
    assert never_fits([Part(8)] * 3, agents) == (
        "3 instances need 24 slots together; the agents have 16 in all"
    )
    assert never_fits([Part(0, cpu=12.0)] * 3, agents) == (
        "3 instances need 36 cores together; the agents have 32 in all"
    )
    assert never_fits([Part(4, label="gpu")] * 3, agents) == (
        "3 instances need 12 slots together; the agents with label 'gpu' have 8 in all"
    )
    assert never_fits([Part(8)] * 2, agents) is None


def test_agents_that_do_not_say_their_cores_or_memory_have_them_unlimited() -> None:
    agents = [_agent("a0", 8)]
    assert never_fits([Part(1, cpu=512.0, memory_mb=10**7)] * 4, agents) is None


def test_disabled_agents_count_for_what_a_pool_could_hold_and_no_agents_say_nothing() -> None:
    assert never_fits([Part(8)], [_agent("a0", 8, enabled=False)]) is None
    assert never_fits([Part(8)], []) is None
