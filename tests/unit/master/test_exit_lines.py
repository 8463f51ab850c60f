"""A process's last log lines travel with its exit and are stored in the exit's transaction:
never after the run is seen to have ended, once however often the exit is repeated, and never
holding the exit back."""

from __future__ import annotations

import pytest

from assay.db import Allocation, logs
from assay.master import Master
from assay.protocol import Exited, Hello, LogEntry
from tests.unit.master.support import run
from tests.unit.master.test_handlers import caller_for, connect_agent, start_single, trials


def stored_lines(master: Master, trial_id: int) -> list[str]:
    return [row.line for row in master.db.run_sync(lambda s: logs.after(s, trial_id, 0, 100))]


def test_an_exits_last_lines_are_stored_with_it_once_however_often_it_is_repeated(
    master: Master, context: bytes
) -> None:
    _, agent, alloc_id = start_single(master, context)
    trial_id = caller_for(master, alloc_id).trial_id
    tail = [LogEntry(alloc_id, trial_id, f"line {i}", time=1.0 + i) for i in range(3)]
    exit_ = Exited(alloc_id, 1, "", logs=tail)
    run(master.agents.on_message("a1", exit_))
    assert stored_lines(master, trial_id) == ["line 0", "line 1", "line 2"]
    assert trials(master)[0].restarts == 1, "the exit itself was recorded"
    # Repeated as a reconnecting agent repeats an exit the master had not acknowledged.
    run(master.agents.on_message("a1", exit_))
    run(master.agents.disconnected(master.hub.agents["a1"]))
    hello = Hello(agent_id="a1", exited=[exit_])
    run(master.pools.join(hello.to_dict(), agent))
    assert stored_lines(master, trial_id) == ["line 0", "line 1", "line 2"]


def test_an_exit_the_master_recorded_without_its_agent_still_gets_its_lines(
    master: Master, context: bytes
) -> None:
    _, _agent, alloc_id = start_single(master, context)
    trial_id = caller_for(master, alloc_id).trial_id
    run(master.agents.disconnected(master.hub.agents["a1"]))
    connect_agent(master, running=[])  # back without it: ended as lost
    alloc = master.db.run_sync(lambda s: s.get(Allocation, alloc_id))
    assert alloc is not None and alloc.state == "TERMINATED"
    before = trials(master)[0]
    late = Exited(alloc_id, 1, "", logs=[LogEntry(alloc_id, trial_id, "Traceback", time=2.0)])
    run(master.agents.on_message("a1", late))
    assert stored_lines(master, trial_id) == ["Traceback"]
    after = trials(master)[0]
    assert (after.state, after.restarts) == (before.state, before.restarts), "ended once"


def test_a_nul_in_a_line_is_kept_as_a_replacement_character(master: Master, context: bytes) -> None:
    _, _agent, alloc_id = start_single(master, context)
    trial_id = caller_for(master, alloc_id).trial_id
    binary = Exited(alloc_id, 0, "", logs=[LogEntry(alloc_id, trial_id, "a\x00b", time=1.0)])
    run(master.agents.on_message("a1", binary))
    assert stored_lines(master, trial_id) == ["a\ufffdb"]


def test_last_lines_the_database_refuses_do_not_hold_their_exit_back(
    master: Master, context: bytes
) -> None:
    if master.db.engine.dialect.name != "postgresql":
        pytest.skip("SQLite keeps a text of any length in a VARCHAR(64)")
    _, agent, alloc_id = start_single(master, context)
    trial_id = caller_for(master, alloc_id).trial_id
    too_long = LogEntry("x" * 100, trial_id, "a line of an allocation id too long to store")
    run(master.agents.on_message("a1", Exited(alloc_id, 1, "", logs=[too_long])))
    assert trials(master)[0].restarts == 1, "the exit was recorded"
    assert agent.of("ack_exit")[-1]["allocation_id"] == alloc_id
    assert stored_lines(master, trial_id) == []
