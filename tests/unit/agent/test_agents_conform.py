"""The agents' resource manager passes the conformance kit every resource manager runs."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from assay.agent._executor import LocalProcesses
from assay.agent._runner import AgentEnv
from assay.client import HttpSession
from assay.protocol import Hello, Slot
from assay.rm import ResourceManager
from assay.rm.testing import CHECKS, Subject


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__)
def test_agent_processes_conform(
    check: Callable[[Subject], Awaitable[None]], tmp_path: Path
) -> None:
    async def scenario() -> None:
        slots = [Slot(id=str(i)) for i in range(2)]
        env = AgentEnv(
            agent_id="kit-agent",
            master_url="http://127.0.0.1:9",
            work_root=tmp_path,
            http=HttpSession("http://127.0.0.1:9"),
            slots={s.id: s for s in slots},
            kill_grace=5.0,
        )
        # The agent outlives the master: a restarted master meets the same processes again.
        processes = LocalProcesses(env, Hello(agent_id="kit-agent", slots=slots))

        async def open_manager() -> ResourceManager:
            return processes

        await check(Subject(open_manager=open_manager, timeout=30.0))
        await processes.kill_all()

    asyncio.run(scenario())


def test_agent_processes_are_a_resource_manager(tmp_path: Path) -> None:
    env = AgentEnv(
        agent_id="a",
        master_url="http://127.0.0.1:9",
        work_root=tmp_path,
        http=HttpSession("http://127.0.0.1:9"),
        slots={},
    )
    assert isinstance(LocalProcesses(env, Hello(agent_id="a")), ResourceManager)
