"""An allocation's last log lines go with its exit, to be stored in the exit's transaction; where
lines written before them still wait for the master, they wait behind those instead."""

from __future__ import annotations

import asyncio
from pathlib import Path

from assay.agent import Agent
from assay.agent._executor import LocalProcesses
from assay.agent._runner import AgentEnv
from assay.client import HttpSession
from assay.protocol import AgentMessage, Exited, Hello, LogEntry, Logs


def test_an_allocations_last_lines_go_with_its_exit_and_no_one_elses(tmp_path: Path) -> None:
    sent: list[AgentMessage | Hello] = []

    async def report(node: str, message: AgentMessage | Hello) -> None:
        sent.append(message)

    env = AgentEnv(
        agent_id="a1",
        master_url="http://127.0.0.1:9",
        work_root=tmp_path,
        http=HttpSession("http://127.0.0.1:9"),
        slots={},
        kill_grace=5.0,
    )

    async def scenario() -> None:
        procs = LocalProcesses(env, Hello(agent_id="a1"))
        await procs.open(report)
        await procs.fail("8.1", 8, "another allocation's start")
        await procs.fail("7.1", 7, "the layout is garbled")
        await procs.close()

    asyncio.run(scenario())
    exits = {m.allocation_id: m for m in sent if isinstance(m, Exited)}
    assert [e.line for e in exits["7.1"].logs] == [
        "assay agent a1: could not start the trial: the layout is garbled"
    ]
    assert [e.allocation_id for e in exits["8.1"].logs] == ["8.1"]
    assert not [m for m in sent if isinstance(m, Logs)], "no line is sent twice"


def test_last_lines_wait_behind_earlier_ones_while_the_master_is_away(tmp_path: Path) -> None:
    agent = Agent(agent_id="a1", master_url="http://127.0.0.1:9", slots=[], work_root=tmp_path)

    async def scenario() -> None:
        await agent.processes.open(agent._report)
        await agent._report("a1", Logs([LogEntry("7.1", 7, "written before")]))
        await agent.processes.fail("7.1", 7, "the layout is garbled")

    asyncio.run(scenario())
    assert [e.line for e in agent.logs] == [
        "written before",
        "assay agent a1: could not start the trial: the layout is garbled",
    ]
    assert agent.unacked_exits["7.1"].logs == [], "its hello repeats the exit without them"
