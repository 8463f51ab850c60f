"""How an agent ends its allocations: a kill the master sends for an allocation it has given up
on (``Kill.fenced``) is a SIGKILL at once, with no grace in which the copy could write more;
an agent that stops ends its allocations and says they ended with it (``Exited.lost``), so
their trials' restarts are not counted as their own failures. Real processes, no master."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from assay.agent._executor import LocalProcesses
from assay.agent._runner import AgentEnv
from assay.client import HttpSession
from assay.protocol import Hello, Slot
from assay.rm.testing import Recorder, start

GRACE = 30.0
"""Longer than any of these tests may take: a kill that waited for it would show."""

STUBBORN = "trap '' TERM; echo ready; while true; do sleep 0.1; done"
"""An allocation that ignores SIGTERM (as one that checkpoints on SIGTERM would linger)."""


def processes(tmp_path: Path) -> LocalProcesses:
    slots = [Slot(id="0")]
    env = AgentEnv(
        agent_id="a1",
        master_url="http://127.0.0.1:9",
        work_root=tmp_path,
        http=HttpSession("http://127.0.0.1:9"),
        slots={s.id: s for s in slots},
        kill_grace=GRACE,
    )
    return LocalProcesses(env, Hello(agent_id="a1", slots=slots))


async def started_stubborn(manager: LocalProcesses, recorder: Recorder) -> str:
    await manager.open(recorder)
    message = start(manager.node, STUBBORN)
    await manager.start("a1", message)
    alloc = message.allocation_id
    await recorder.wait_for(lambda r: ("stdout", "ready") in r.lines(alloc), 30, "ready")
    return alloc


def test_a_fenced_kill_ends_the_allocation_at_once_without_the_grace(tmp_path: Path) -> None:
    async def scenario() -> tuple[float, int | None]:
        manager, recorder = processes(tmp_path), Recorder()
        alloc = await started_stubborn(manager, recorder)
        began = time.monotonic()
        await manager.kill("a1", alloc, now=True)
        await recorder.wait_for(lambda r: bool(r.exits(alloc)), GRACE, "its exit")
        took = time.monotonic() - began
        (exit_,) = recorder.exits(alloc)
        await manager.close()
        return took, exit_.exit_code

    took, code = asyncio.run(scenario())
    assert code == -9
    assert took < GRACE / 2, f"the kill waited {took:.1f}s: it gave the copy its grace"


def test_an_agent_that_stops_says_its_allocations_ended_with_it(tmp_path: Path) -> None:
    async def scenario() -> tuple[bool, str]:
        manager, recorder = processes(tmp_path), Recorder()
        await manager.open(recorder)
        message = start(manager.node, "echo ready; sleep 600")
        await manager.start("a1", message)
        alloc = message.allocation_id
        await recorder.wait_for(lambda r: ("stdout", "ready") in r.lines(alloc), 30, "ready")
        await manager.kill_all()
        await recorder.wait_for(lambda r: bool(r.exits(alloc)), GRACE, "its exit")
        (exit_,) = recorder.exits(alloc)
        await manager.close()
        return exit_.lost, exit_.reason

    lost, reason = asyncio.run(scenario())
    assert lost
    assert reason == "agent a1 stopped"


def test_a_kill_from_the_master_is_not_an_agent_loss(tmp_path: Path) -> None:
    async def scenario() -> bool:
        manager, recorder = processes(tmp_path), Recorder()
        await manager.open(recorder)
        message = start(manager.node, "echo ready; sleep 600")
        await manager.start("a1", message)
        alloc = message.allocation_id
        await recorder.wait_for(lambda r: ("stdout", "ready") in r.lines(alloc), 30, "ready")
        await manager.kill("a1", alloc)
        await recorder.wait_for(lambda r: bool(r.exits(alloc)), GRACE, "its exit")
        (exit_,) = recorder.exits(alloc)
        await manager.close()
        return exit_.lost

    assert not asyncio.run(scenario())
