"""The indexed gang fitting decides exactly as the scan it replaced (reference_fitting)."""

from __future__ import annotations

import dataclasses
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.scheduler import (
    Agent,
    Decision,
    Fitting,
    Job,
    Part,
    PoolSnapshot,
    Request,
    fit_parts,
    schedule,
)
from assay.scheduler._pass import Pass
from assay.scheduler.testing import gang_requests, snapshots
from tests.unit.scheduler.reference_fitting import scan_fit_parts, scan_start_gang

SCALES = [1.0, 1.0, 0.1, 0.3, 1 / 3, 0.7]
"""Factors on every core count: fractions make sums of cores round as floats do."""


def _scaled(pool: PoolSnapshot, factor: float) -> PoolSnapshot:
    agents = tuple(dataclasses.replace(a, cpu=a.cpu * factor) for a in pool.agents)
    running = tuple(
        dataclasses.replace(
            r, usage={agent: (cores * factor, mb) for agent, (cores, mb) in r.usage.items()}
        )
        for r in pool.running
    )
    pending = tuple(
        dataclasses.replace(
            r, parts=tuple(dataclasses.replace(p, cpu=p.cpu * factor) for p in r.parts)
        )
        for r in pool.pending
    )
    return dataclasses.replace(pool, agents=agents, running=running, pending=pending)


@st.composite
def gang_pools(draw: st.DrawFn, max_agents: int = 12, max_gangs: int = 6) -> PoolSnapshot:
    """Pools with gangs (cores, memory, labels, CPU-only agents, busy or not, either policy,
    preemption or not, either fitting), more gangs than the kit's pools, cores scaled."""
    pool = draw(
        snapshots(
            gangs=True,
            busy=draw(st.booleans()),
            max_agents=draw(st.sampled_from([6, max_agents])),
            max_pending=12,
        )
    )
    gang_jobs = sorted(j for j in pool.jobs if j.startswith("g"))
    more = tuple(
        draw(gang_requests(f"g-x{i}", draw(st.sampled_from(gang_jobs))))
        for i in range(draw(st.integers(0, max_gangs)))
    )
    pool = dataclasses.replace(pool, pending=pool.pending + more)
    return _scaled(pool, draw(st.sampled_from(SCALES)))


def _by_scan(pool: PoolSnapshot) -> Decision:
    with mock.patch.object(Pass, "start_gang", scan_start_gang):
        return schedule(pool, now=0.0)


@settings(max_examples=400, deadline=None)
@given(pool=gang_pools())
def test_indexed_gang_fitting_makes_the_same_decision_as_scanning_every_agent(
    pool: PoolSnapshot,
) -> None:
    assert schedule(pool, now=0.0) == _by_scan(pool)


@settings(max_examples=50, deadline=None)
@given(pool=gang_pools(max_agents=40, max_gangs=20))
def test_many_gangs_on_many_agents_are_placed_as_the_scan_placed_them(pool: PoolSnapshot) -> None:
    assert schedule(pool, now=0.0) == _by_scan(pool)


_CORES = st.sampled_from([0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 4.0])


@st.composite
def _fit_cases(
    draw: st.DrawFn,
) -> tuple[list[Part], list[Agent], dict[str, list[str]], dict[str, float], dict[str, float]]:
    agents = []
    free: dict[str, list[str]] = {}
    free_cpu: dict[str, float] = {}
    free_memory: dict[str, float] = {}
    for i in range(draw(st.integers(1, 10))):
        size = draw(st.sampled_from([0, 1, 2, 4, 8]))
        slots = tuple(f"a{i}s{s}" for s in range(size))
        agent = Agent(
            f"a{i}",
            slots,
            slots,
            frozenset(draw(st.lists(st.sampled_from(["gpu", "big"]), max_size=2))),
            enabled=draw(st.sampled_from([True, True, True, False])),
            cpu=draw(st.sampled_from([0.0, 0.3, 1.0, 2.0, 4.0])),
            memory_mb=draw(st.sampled_from([0, 1024, 4096])),
        )
        agents.append(agent)
        free[agent.id] = list(draw(st.lists(st.sampled_from(slots), unique=True)) if slots else [])
        if draw(st.booleans()):
            free_cpu[agent.id] = draw(_CORES)
        if draw(st.booleans()):
            free_memory[agent.id] = draw(st.sampled_from([0, 512, 1024, 2048]))
    parts = draw(
        st.lists(
            st.builds(
                Part,
                slots=st.sampled_from([0, 0, 1, 2, 4]),
                cpu=_CORES,
                memory_mb=st.sampled_from([0, 256, 1024]),
                label=st.sampled_from([None, None, "gpu", "big"]),
            ),
            min_size=1,
            max_size=8,
        )
    )
    return parts, agents, free, free_cpu, free_memory


@settings(max_examples=400, deadline=None)
@given(case=_fit_cases(), fitting=st.sampled_from(list(Fitting)))
def test_fit_parts_puts_every_part_where_the_scan_puts_it(
    case: tuple[list[Part], list[Agent], dict[str, list[str]], dict[str, float], dict[str, float]],
    fitting: Fitting,
) -> None:
    parts, agents, free, free_cpu, free_memory = case
    expected = scan_fit_parts(parts, agents, free, free_cpu, free_memory, fitting)
    assert fit_parts(parts, agents, free, free_cpu, free_memory, fitting) == expected


def test_gangs_of_fractional_cores_fill_an_agent_as_the_scan_does() -> None:
    # 0.1 + 0.2 cores round above 0.3: the tolerance, not the float sum, decides.
    agents = (Agent("a0", (), (), cpu=0.3), Agent("a1", (), (), cpu=0.6))
    jobs = {"g": Job("g")}
    pending = tuple(
        Request(f"r{i}", "g", 0, parts=(Part(0, cpu=0.1), Part(0, cpu=0.2))) for i in range(4)
    )
    for fitting in Fitting:
        pool = PoolSnapshot("default", agents, jobs, pending, (), fitting=fitting)
        decision = schedule(pool, now=0.0)
        assert decision == _by_scan(pool)
        assert len(decision.parts) == 3
