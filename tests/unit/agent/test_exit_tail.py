"""An allocation's last log lines go with its exit, to be stored in the exit's transaction; where
lines written before them still wait for the master, they wait behind those instead. (Here the
master is away; the master's side is in tests/unit/master/test_exit_lines.py.)"""

from __future__ import annotations

import asyncio
from pathlib import Path

from assay.agent import Agent
from assay.agent._daemon import EXIT_LINES_CHARS
from assay.agent._executor import LOG_BATCH
from assay.protocol import Exited, LogEntry, Logs

COULD_NOT_START = "assay agent a1: could not start the trial: the layout is garbled"


def agent(tmp_path: Path) -> Agent:
    return Agent(agent_id="a1", master_url="http://127.0.0.1:9", slots=[], work_root=tmp_path)


def test_the_exit_a_reconnect_repeats_carries_the_allocations_last_lines(tmp_path: Path) -> None:
    a1 = agent(tmp_path)

    async def scenario() -> None:
        await a1.processes.open(a1._report)
        await a1._report("a1", Logs([LogEntry("7.1", 7, "written before")]))
        await a1.processes.fail("7.1", 7, "the layout is garbled")

    asyncio.run(scenario())
    exit_ = a1.unacked_exits["7.1"]
    assert [e.line for e in exit_.logs] == ["written before", COULD_NOT_START]
    assert not a1.logs, "no line is sent twice"
    assert a1.processes.hello().exited == [exit_]


def test_another_allocations_waiting_lines_do_not_hold_the_last_lines_back(
    tmp_path: Path,
) -> None:
    a1 = agent(tmp_path)

    async def scenario() -> None:
        await a1.processes.open(a1._report)
        await a1._report("a1", Logs([LogEntry("8.1", 8, "another's line")]))
        await a1.processes.fail("7.1", 7, "the layout is garbled")

    asyncio.run(scenario())
    assert [e.line for e in a1.unacked_exits["7.1"].logs] == [COULD_NOT_START]
    assert [e.line for e in a1.logs] == ["another's line"]


def test_last_lines_wait_behind_earlier_lines_of_theirs_too_many_to_go_with_the_exit(
    tmp_path: Path,
) -> None:
    a1 = agent(tmp_path)
    earlier = [LogEntry("7.1", 7, f"line {i}") for i in range(LOG_BATCH)]

    async def scenario() -> None:
        await a1.processes.open(a1._report)
        await a1._report("a1", Logs(earlier))
        await a1.processes.fail("7.1", 7, "the layout is garbled")

    asyncio.run(scenario())
    assert [e.line for e in a1.logs] == [e.line for e in earlier] + [COULD_NOT_START]
    assert a1.unacked_exits["7.1"].logs == [], "its repeat goes without them"


def test_an_exit_carries_no_more_than_its_share_of_the_last_output(tmp_path: Path) -> None:
    """An exit is repeated in every hello until acknowledged: past ``EXIT_LINES_CHARS`` the
    earlier lines go ahead of it as usual."""
    a1 = agent(tmp_path)
    big = EXIT_LINES_CHARS // 2 + 1
    lines = [LogEntry("7.1", 7, str(i) * big) for i in range(3)]
    a1.logs.extend(lines)
    exit_ = a1._with_last_lines(Exited("7.1", 0))
    assert exit_.logs == lines[-1:]
    assert list(a1.logs) == lines[:-1]
