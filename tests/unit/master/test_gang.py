"""Trials of several slots in the master: the rank layout each agent is sent, the rendezvous
port, and one allocation's exit gathered from all its agents."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from assay.config import MasterConfig
from assay.db import Allocation, Trial
from assay.launch import rank_env as process_env
from assay.master import Master, Submission
from assay.master.experiments._gang import (
    RENDEZVOUS_BASE,
    RUN_SHIFTS,
    first_failure,
    pick_port,
    rank_layouts,
    run_base,
)
from assay.protocol import RankLayout
from tests.unit.master.conftest import ADMIN
from tests.unit.master.support import Recorder, run


def submit(master: Master, context: bytes, slots: int, trials: int = 1) -> int:
    config = {
        "entrypoint": "python3 train.py",
        "hyperparameters": {"lr": {"type": "double", "minval": 0.1, "maxval": 1.0}},
        "searcher": {
            "name": "random",
            "metric": "loss",
            "max_trials": trials,
            "max_length": {"batches": 100},
        },
        "resources": {"slots_per_trial": slots},
        "max_restarts": 1,
    }
    return run(master.experiments.create(ADMIN, Submission(yaml.safe_dump(config), context))).id


def connect(master: Master, agent_id: str, slots: int, address: str) -> Recorder:
    recorder = Recorder()
    hello = {
        "type": "hello",
        "agent_id": agent_id,
        "slots": [{"id": str(i), "type": "cpu"} for i in range(slots)],
        "address": address,
    }
    run(master.pools.join(hello, recorder))
    return recorder


def allocation(master: Master, alloc_id: str) -> Allocation:
    alloc = master.db.run_sync(lambda s: s.get(Allocation, alloc_id))
    assert alloc is not None
    return alloc


def exited(master: Master, agent_id: str, alloc_id: str, code: int | None) -> None:
    msg = {"type": "exited", "allocation_id": alloc_id, "exit_code": code, "reason": ""}
    run(master.agents.on_message(agent_id, msg))


def gang_of_two(master: Master, context: bytes) -> tuple[Recorder, Recorder, str]:
    submit(master, context, slots=2)
    a1 = connect(master, "a1", 1, "10.0.0.1")
    a2 = connect(master, "a2", 1, "10.0.0.2")
    run(master.loops.schedule_once())
    (start,) = a1.of("start")
    return a1, a2, str(start["allocation_id"])


def test_gang_start_messages_carry_each_agents_rank_layout(master: Master, context: bytes) -> None:
    a1, a2, alloc_id = gang_of_two(master, context)
    (first,), (second,) = a1.of("start"), a2.of("start")
    assert first["distributed"] == {
        "world_size": 2,
        "node_rank": 0,
        "num_nodes": 2,
        "first_rank": 0,
        "local_world_size": 1,
        "master_addr": "10.0.0.1",
        "master_port": 29500,
        "rendezvous_port": 29501,
    }
    assert second["distributed"] == {**first["distributed"], "node_rank": 1, "first_rank": 1}
    assert first["cluster_info"]["container_addrs"] == ["10.0.0.1", "10.0.0.2"]
    assert [first["cluster_info"]["container_rank"], second["cluster_info"]["container_rank"]] == [
        0,
        1,
    ]
    assert allocation(master, alloc_id).rendezvous_port == 29500


def test_single_slot_trials_start_without_a_rank_layout(master: Master, context: bytes) -> None:
    submit(master, context, slots=1)
    agent = connect(master, "a1", 1, "10.0.0.1")
    run(master.loops.schedule_once())
    (start,) = agent.of("start")
    assert "distributed" not in start
    assert allocation(master, start["allocation_id"]).rendezvous_port is None


def test_trials_meeting_on_one_agent_use_loopback_and_distinct_ports(
    master: Master, context: bytes
) -> None:
    submit(master, context, slots=2, trials=2)
    agent = connect(master, "a1", 4, "10.0.0.1")
    run(master.loops.schedule_once())
    starts = agent.of("start")
    assert len(starts) == 2
    layouts = [s["distributed"] for s in starts]
    assert {d["master_addr"] for d in layouts} == {"127.0.0.1"}
    assert sorted(d["master_port"] for d in layouts) == [29500, 29502]
    assert all(d["local_world_size"] == 2 and d["num_nodes"] == 1 for d in layouts)


def test_a_failed_agent_gets_the_rest_of_the_gang_killed_and_its_code_ends_it(
    master: Master, context: bytes
) -> None:
    a1, a2, alloc_id = gang_of_two(master, context)
    exited(master, "a2", alloc_id, 3)
    assert a1.of("kill") == [{"type": "kill", "allocation_id": alloc_id, "fenced": False}]
    assert a2.of("kill") == []
    alloc = allocation(master, alloc_id)
    assert alloc.state != "TERMINATED", "a1's processes are still running"
    assert alloc.exits == {"a2": 3}
    exited(master, "a1", alloc_id, -15)
    alloc = allocation(master, alloc_id)
    assert alloc.state == "TERMINATED"
    assert alloc.exit_code == 3
    assert alloc.exits == {"a2": 3, "a1": -15}
    assert "agent a2 failed first" in alloc.exit_reason
    (trial,) = master.db.run_sync(lambda s: s.query(Trial).all())
    assert (trial.state, trial.restarts) == ("RUNNING", 1), "restarted in the exit's transaction"
    assert "exit code 3" in trial.message


def test_a_lost_agent_counts_as_the_first_failure(master: Master, context: bytes) -> None:
    a1, _a2, alloc_id = gang_of_two(master, context)
    exited(master, "a2", alloc_id, None)
    assert a1.of("kill")
    exited(master, "a1", alloc_id, 1)
    alloc = allocation(master, alloc_id)
    assert (alloc.state, alloc.exit_code) == ("TERMINATED", None)
    assert "agent a2 was lost first" in alloc.exit_reason


def test_a_gang_that_succeeds_ends_with_zero_and_kills_nothing(
    master: Master, context: bytes
) -> None:
    a1, a2, alloc_id = gang_of_two(master, context)
    exited(master, "a1", alloc_id, 0)
    assert allocation(master, alloc_id).state != "TERMINATED"
    exited(master, "a1", alloc_id, 0)  # repeated after a reconnect: changes nothing
    exited(master, "a2", alloc_id, 0)
    alloc = allocation(master, alloc_id)
    assert (alloc.state, alloc.exit_code) == ("TERMINATED", 0)
    assert a1.of("kill") == a2.of("kill") == []


def test_an_exit_from_an_agent_outside_the_gang_is_ignored(master: Master, context: bytes) -> None:
    _a1, _a2, alloc_id = gang_of_two(master, context)
    exited(master, "a9", alloc_id, 1)
    alloc = allocation(master, alloc_id)
    assert alloc.state != "TERMINATED" and alloc.exits == {}


@settings(max_examples=200, deadline=None)
@given(
    taken=st.sets(st.integers(29490, 29540), max_size=30),
    base=st.integers(29495, 29510),
)
def test_picked_port_is_the_lowest_free_pair(taken: set[int], base: int) -> None:
    port = pick_port(taken, base)
    assert port >= base
    assert port not in taken and port + 1 not in taken
    assert all(p in taken or p + 1 in taken for p in range(base, port))


@settings(max_examples=200, deadline=None)
@given(
    slots=st.dictionaries(
        st.text("abcdefgh", min_size=1, max_size=4), st.integers(1, 4), min_size=1, max_size=5
    ),
    port=st.integers(1024, 60000),
)
def test_every_rank_is_launched_exactly_once_in_agent_order(
    slots: dict[str, int], port: int
) -> None:
    placement = {a: tuple(str(i) for i in range(n)) for a, n in slots.items()}
    layouts = rank_layouts(placement, "10.0.0.1", port)
    world = sum(slots.values())
    ranks = []
    for node, agent_id in enumerate(sorted(placement)):
        # As the agent reads it from its start message.
        layout = RankLayout.from_dict(layouts[agent_id].to_dict())
        assert layout.node_rank == node
        for local in range(layout.local_world_size):
            env = process_env(layout, local)
            assert env["WORLD_SIZE"] == str(world)
            assert env["MASTER_PORT"] == str(port)
            assert env["ASSAY_RENDEZVOUS_PORT"] == str(port + 1)
            ranks.append(int(env["RANK"]))
    assert ranks == list(range(world)), "ranks numbered agent after agent"


@given(
    codes=st.lists(
        st.tuples(st.text("ab", min_size=1, max_size=3), st.none() | st.integers(-15, 3)),
        max_size=5,
        unique_by=lambda pair: pair[0],
    )
)
def test_first_failure_is_the_earliest_non_zero_report(
    codes: list[tuple[str, int | None]],
) -> None:
    failing = [(a, c) for a, c in codes if c != 0]
    assert first_failure(dict(codes)) == (failing[0] if failing else None)


def test_a_restarted_gang_meets_on_the_next_pair_of_ports(master: Master, context: bytes) -> None:
    a1, _a2, alloc_id = gang_of_two(master, context)
    exited(master, "a2", alloc_id, 3)
    exited(master, "a1", alloc_id, -15)
    run(master.loops.schedule_once())
    first, second = a1.of("start")
    assert first["distributed"]["master_port"] == 29500
    assert (second["distributed"]["master_port"], second["distributed"]["rendezvous_port"]) == (
        29502,
        29503,
    ), "a port some other program holds is not tried again"
    assert allocation(master, second["allocation_id"]).rendezvous_port == 29502


@given(run_number=st.integers(1, 1000))
def test_each_runs_base_stays_in_a_bounded_window_of_pairs(run_number: int) -> None:
    base = run_base(run_number)
    assert RENDEZVOUS_BASE <= base < RENDEZVOUS_BASE + 2 * RUN_SHIFTS
    assert (base - RENDEZVOUS_BASE) % 2 == 0
    assert run_base(run_number + 1) != base


@given(run_number=st.integers(1, 1000), base=st.integers(29500, 32700))
def test_runs_start_their_search_at_the_masters_rendezvous_port_base(
    run_number: int, base: int
) -> None:
    assert base <= run_base(run_number, base) < base + 2 * RUN_SHIFTS
    assert run_base(1, base) == base


def test_a_rendezvous_port_base_among_job_or_ephemeral_ports_is_refused() -> None:
    assert MasterConfig(rendezvous_port_base=29600).rendezvous_port_base == 29600
    for wrong in (29499, 32701):
        with pytest.raises(ValidationError, match="rendezvous_port_base"):
            MasterConfig(rendezvous_port_base=wrong)
