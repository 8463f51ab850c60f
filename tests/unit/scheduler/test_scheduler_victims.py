"""Victim choice: the request fits with the victims chosen, and without any one of them it
does not; when no victims are chosen, not even all candidates together make it fit."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.scheduler import Fitting, PoolSnapshot, Request, Running
from assay.scheduler._fit import fit
from assay.scheduler._index import PoolState
from assay.scheduler._preempt import VictimIndex
from assay.scheduler._queue import QueueKey
from assay.scheduler._victims import choose_victims
from assay.scheduler.testing import snapshots
from tests.unit.scheduler.scheduler_strategies import agents_of, used


def _key(rank: int) -> QueueKey:
    """A queue position standing for ``rank`` (only the order matters)."""
    return (rank, 0.0, 0.0, "")


def _free_with(state: PoolState, victims: list[Running]) -> dict[str, list[str]]:
    out = {a: [*state.avail[a], *state.coming.get(a, [])] for a in state.avail}
    for v in victims:
        for agent_id, slots in v.assignment.items():
            if agent_id in out:
                out[agent_id].extend(slots)
    return {a: sorted(s) for a, s in out.items()}


@settings(max_examples=300, deadline=None)
@given(
    pool=snapshots(busy=True, max_agents=5),
    slots=st.sampled_from([1, 2, 3, 4, 6, 8, 16]),
    label=st.sampled_from([None, None, "gpu"]),
    single=st.booleans(),
    data=st.data(),
)
def test_every_chosen_victim_is_needed_and_none_are_chosen_when_all_would_not_do(
    pool: PoolSnapshot,
    slots: int,
    label: str | None,
    single: bool,
    data: st.DataObject,
) -> None:
    req = Request("r", "new", slots, label=label, is_single_node=single)
    state = PoolState(pool.agents, pool.fitting)
    for alloc in pool.running:
        if alloc.preempting:
            state.add_coming(alloc.assignment)
    if state.fit_soon(req) is not None:
        return
    candidates = data.draw(st.permutations([a for a in pool.running if not a.preempting]))
    chosen = choose_victims(req, state, iter(candidates))
    if chosen is None:
        assert fit(req, pool.agents, _free_with(state, candidates), pool.fitting) is None
        return
    victims, placement = chosen
    assert placement == fit(req, pool.agents, _free_with(state, victims), pool.fitting)
    for victim in victims:
        rest = [v for v in victims if v is not victim]
        assert fit(req, pool.agents, _free_with(state, rest), pool.fitting) is None, (
            f"{victim.id} was not needed"
        )


def test_a_later_victim_that_alone_suffices_replaces_earlier_partial_ones() -> None:
    (agent,) = agents_of(8, busy={0: 8})
    small = Running("small", "j", {"a0": used(agent, 1)}, started=9)
    big = Running("big", "j", {"a0": used(agent, 4, 1)}, started=5)
    rest = Running("rest", "j", {"a0": used(agent, 3, 5)}, started=1)
    state = PoolState((agent,), Fitting.BEST)
    chosen = choose_victims(Request("r", "k", 4), state, iter([small, big, rest]))
    assert chosen is not None
    assert [v.id for v in chosen[0]] == ["big"]


def test_victims_take_the_candidates_in_order_of_preference() -> None:
    a0, a1 = agents_of(4, 4, busy={0: 4, 1: 4})
    first = Running("first", "j", {"a1": a1.slots}, started=1)
    second = Running("second", "j", {"a0": a0.slots}, started=2)
    state = PoolState((a0, a1), Fitting.BEST)
    chosen = choose_victims(Request("r", "k", 4), state, iter([first, second]))
    assert chosen is not None
    assert [v.id for v in chosen[0]] == ["first"]
    assert chosen[1] == {"a1": a1.slots}


def test_a_gang_is_made_room_for_by_clearing_whole_agents() -> None:
    a0, a1, a2 = agents_of(4, 4, 4, busy={0: 4, 1: 4, 2: 4})
    allocs = [
        Running("x0", "j", {"a0": used(a0, 2)}),
        Running("x1", "j", {"a0": used(a0, 2, 2)}),
        Running("x2", "j", {"a1": used(a1, 4)}),
        Running("x3", "j", {"a2": used(a2, 3)}),
    ]
    state = PoolState((a0, a1, a2), Fitting.BEST)
    chosen = choose_victims(Request("r", "k", 8), state, iter(allocs))
    assert chosen is not None
    assert sorted(v.id for v in chosen[0]) == ["x0", "x1", "x2"]
    assert chosen[1] == {"a0": a0.slots, "a1": a1.slots}


@settings(max_examples=300, deadline=None)
@given(
    pool=snapshots(busy=True, max_agents=8, preemption=True),
    data=st.data(),
)
def test_indexed_victim_search_picks_what_the_plain_walk_picks_over_a_whole_pass(
    pool: PoolSnapshot, data: st.DataObject
) -> None:
    state = PoolState(pool.agents, pool.fitting)
    for alloc in pool.running:
        if alloc.preempting:
            state.add_coming(alloc.assignment)
    holding = [a for a in pool.running if not a.preempting]
    candidates = data.draw(st.permutations(holding))
    # Some allocations are not candidates; they may give their slots back mid-pass, which is
    # how an agent's soon-free slots grow behind the walk's cursor.
    others = [c for c in candidates if data.draw(st.booleans())]
    candidates = [c for c in candidates if c not in others]
    ranks = data.draw(
        st.lists(st.integers(0, 6), min_size=len(candidates), max_size=len(candidates))
    )
    rank_of = {c.id: r for c, r in zip(candidates, ranks, strict=True)}
    index = VictimIndex(state, candidates, [_key(r) for r in ranks])
    consumed: set[str] = set()
    job_rank = -1
    shapes = st.tuples(
        st.sampled_from([1, 1, 2, 2, 3, 4, 4, 8, 16]),
        st.sampled_from([None, None, None, "gpu"]),
        st.booleans(),
    )
    for n, (slots, label, single) in enumerate(data.draw(st.lists(shapes, max_size=20))):
        job_rank += data.draw(st.integers(0, 1))
        if len(others) > 0 and data.draw(st.booleans()):
            state.add_coming(others.pop().assignment)
        req = Request(f"r{n}", "new", slots, label=label, is_single_node=single)
        placement = state.fit_now(req) or state.fit_soon(req)
        if placement is not None:
            state.take(placement)
            continue
        live = [c for c in candidates if c.id not in consumed and rank_of[c.id] > job_rank]
        expected = choose_victims(req, state, iter(live))
        got = index.choose(req, _key(job_rank))
        assert got == expected
        if got is not None:
            victims, placement = got
            consumed.update(v.id for v in victims)
            for victim in victims:
                state.add_coming(victim.assignment)
            state.take(placement)


def test_agents_made_ready_by_returning_slots_are_taken_in_order_of_their_victims() -> None:
    # The walk for 4 slots passes a1 (on a0) and b1 (on a1) without a fit. Then slots come back
    # to both agents: each now reaches 4 with its own victim, a0 after fewer candidates, so a0
    # is the one the plain walk would stop at.
    a0, a1 = agents_of(4, 4, busy={0: 4, 1: 4})
    first = Running("first", "j", {"a0": used(a0, 1)})
    second = Running("second", "j", {"a1": used(a1, 2)})
    state = PoolState((a0, a1), Fitting.BEST)
    index = VictimIndex(state, [first, second], [_key(5), _key(5)])
    req = Request("r", "k", 4)
    assert index.choose(req, _key(0)) is None
    state.add_coming({"a0": used(a0, 3, 1)})
    state.add_coming({"a1": used(a1, 2, 2)})
    expected = choose_victims(req, state, iter([first, second]))
    assert expected is not None and [v.id for v in expected[0]] == ["first"]
    assert index.choose(req, _key(0)) == expected
