"""A process's last log lines travel with its exit and are stored in the exit's transaction:
never after the run is seen to have ended, and once however often the exit is repeated."""

from __future__ import annotations

from assay.db import logs
from assay.master import Master
from assay.protocol import Exited, Hello, LogEntry
from tests.unit.master.support import run
from tests.unit.master.test_handlers import caller_for, start_single, trials


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
    run(master.agents.connected(hello.to_dict(), agent))
    assert stored_lines(master, trial_id) == ["line 0", "line 1", "line 2"]


def test_an_exit_from_an_agent_that_does_not_run_the_allocation_stores_no_lines(
    master: Master, context: bytes
) -> None:
    _, _agent, alloc_id = start_single(master, context)
    trial_id = caller_for(master, alloc_id).trial_id
    stray = Exited(alloc_id, 0, "", logs=[LogEntry(alloc_id, trial_id, "not mine")])
    run(master.agents.on_message("stranger", stray))
    assert stored_lines(master, trial_id) == []
    assert trials(master)[0].state == "RUNNING"
