"""Placement: the indexed fit used by the policies picks exactly what the reference fit picks."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.scheduler import Agent, Fitting, PoolSnapshot, Request
from assay.scheduler._fit import fit
from assay.scheduler._index import PoolState
from assay.scheduler.testing import snapshots
from tests.unit.scheduler.scheduler_strategies import agents_of


def _reference_free(state: PoolState, soon: bool) -> dict[str, list[str]]:
    return {
        a: sorted([*state.avail[a], *(state.coming.get(a, []) if soon else [])])
        for a in state.avail
    }


def _requests() -> st.SearchStrategy[Request]:
    return st.builds(
        Request,
        id=st.just("r"),
        job_id=st.just("j0"),
        slots=st.sampled_from([1, 2, 3, 4, 6, 8, 12, 16, 24]),
        label=st.sampled_from([None, None, "gpu"]),
        is_single_node=st.booleans(),
    )


@settings(max_examples=150, deadline=None)
@given(
    pool=snapshots(max_agents=8),
    reqs=st.lists(_requests(), min_size=1, max_size=8),
    data=st.data(),
)
def test_indexed_fit_matches_reference_fit_as_slots_are_taken_and_given_back(
    pool: PoolSnapshot, reqs: list[Request], data: st.DataObject
) -> None:
    state = PoolState(pool.agents, pool.fitting)
    for alloc in pool.running:
        if alloc.preempting:
            state.add_coming(alloc.assignment)
    holding = [a for a in pool.running if not a.preempting]
    for req in reqs:
        now = state.fit_now(req)
        assert now == fit(req, pool.agents, _reference_free(state, soon=False), pool.fitting)
        soon = state.fit_soon(req)
        if now is None:
            assert soon == fit(req, pool.agents, _reference_free(state, soon=True), pool.fitting)
        taken = now if now is not None else soon
        if taken is not None and data.draw(st.booleans()):
            state.take(taken)
        if len(holding) > 0 and data.draw(st.booleans()):
            alloc = holding.pop(data.draw(st.integers(0, len(holding) - 1)))
            state.add_coming(alloc.assignment)
    assert state.free_now == sum(len(s) for s in state.avail.values())
    assert state.free_soon == state.free_now + sum(len(s) for s in state.coming.values())


def test_best_fit_packs_onto_the_fullest_agent_that_fits() -> None:
    agents = agents_of(8, 8, 8, busy={0: 6, 1: 3, 2: 0})
    free = {a.id: a.free for a in agents}
    placement = fit(Request("r", "j", 2), agents, free, Fitting.BEST)
    assert placement == {"a0": ("a0s6", "a0s7")}


def test_worst_fit_spreads_onto_the_emptiest_agent() -> None:
    agents = agents_of(8, 8, 8, busy={0: 6, 1: 3, 2: 0})
    free = {a.id: a.free for a in agents}
    placement = fit(Request("r", "j", 2), agents, free, Fitting.WORST)
    assert placement == {"a2": ("a2s0", "a2s1")}


def test_request_too_big_for_one_agent_takes_whole_agents_of_equal_size() -> None:
    agents = agents_of(4, 8, 8, 8, busy={2: 1})
    state = PoolState(agents, Fitting.BEST)
    placement = state.fit_now(Request("r", "j", 16))
    assert placement == {"a1": agents[1].slots, "a3": agents[3].slots}


def test_gang_is_all_or_nothing() -> None:
    agents = agents_of(8, 8, busy={1: 1})
    state = PoolState(agents, Fitting.BEST)
    assert state.fit_now(Request("r", "j", 16)) is None
    assert state.fit_now(Request("r", "j", 8)) == {"a0": agents[0].slots}


def test_single_node_request_never_spreads() -> None:
    state = PoolState(agents_of(8, 8), Fitting.BEST)
    assert state.fit_now(Request("r", "j", 16, is_single_node=True)) is None


def test_gang_needs_a_slot_count_that_divides_the_request() -> None:
    state = PoolState(agents_of(8, 8, 8), Fitting.BEST)
    assert state.fit_now(Request("r", "j", 12)) is None


def test_label_restricts_placement_to_agents_carrying_it() -> None:
    plain, labelled = agents_of(8, 2)
    labelled = Agent(labelled.id, labelled.slots, labelled.free, frozenset({"gpu"}))
    state = PoolState((plain, labelled), Fitting.BEST)
    assert state.fit_now(Request("r", "j", 2, label="gpu")) == {"a1": labelled.slots}
    assert state.fit_now(Request("r", "j", 4, label="gpu")) is None


def test_disabled_agent_takes_nothing_new() -> None:
    (agent,) = agents_of(8)
    disabled = Agent(agent.id, agent.slots, agent.free, enabled=False)
    state = PoolState((disabled,), Fitting.BEST)
    assert state.fit_now(Request("r", "j", 1)) is None
    assert fit(Request("r", "j", 1), (disabled,), {agent.id: agent.free}, Fitting.BEST) is None
