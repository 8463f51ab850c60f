"""An ended allocation's files (its unpacked context, its cluster info) are removed once the
master has recorded its exit, out of the way of the starts then under way: the master sends a
slot's next start just ahead of that acknowledgement."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from assay.agent._executor import LocalProcesses
from assay.agent._runner import AgentEnv
from assay.client import HttpSession
from assay.protocol import Hello, Slot
from assay.rm.testing import Recorder, start


def test_an_acknowledged_allocations_files_go_once_the_next_start_has_spawned(
    tmp_path: Path,
) -> None:
    node = Hello(agent_id="a1", slots=[Slot(id="0")])
    env = AgentEnv(
        agent_id="a1",
        master_url="http://127.0.0.1:9",
        work_root=tmp_path,
        http=HttpSession("http://127.0.0.1:9"),
        slots={"0": node.slots[0]},
        kill_grace=5.0,
    )

    async def scenario() -> None:
        procs = LocalProcesses(env, node)
        recorder = Recorder()
        await procs.open(recorder)
        first, second = start(node, "exit 0"), start(node, "sleep 30")
        await procs.start("a1", first)
        await recorder.wait_for(lambda r: bool(r.exits(first.allocation_id)), 30, "the exit")
        files = tmp_path / "allocations" / first.allocation_id
        assert files.is_dir()
        await procs.start("a1", second)
        await procs.acknowledge("a1", first.allocation_id)
        assert files.is_dir(), "removed while the next start was being unpacked"
        await recorder.wait_for(lambda r: r.started(second.allocation_id), 30, "the start")
        deadline = time.monotonic() + 10
        while files.exists() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert not files.exists(), "never removed"
        await procs.kill_all()
        await procs.close()

    asyncio.run(scenario())
