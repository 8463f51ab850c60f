"""An ended allocation's files (its unpacked context, its cluster info) are removed once the
master has recorded its exit, out of the way of the starts then under way: the master sends a
slot's next start just ahead of that acknowledgement."""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from assay.agent._executor import LocalProcesses
from assay.agent._runner import AgentEnv
from assay.client import HttpSession
from assay.context import pack_context
from assay.protocol import ContextRef, Hello, Slot
from assay.rm.testing import Recorder, start
from tests.http_stub import QuietHandler, serving


class HeldContext:
    """A master's context download, answered only once released: a start held unpacking."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.released = threading.Event()


@pytest.fixture
def held(tmp_path: Path) -> Iterator[tuple[HeldContext, str]]:
    code = tmp_path / "code"
    code.mkdir()
    (code / "train.py").write_text("print('hi')\n")
    context = HeldContext(pack_context(code).data)

    class Handler(QuietHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server calls it by this name)
            context.released.wait(30)
            self.answer(context.data)

    with serving(Handler) as url:
        try:
            yield context, url
        finally:
            context.released.set()  # a request still held must end before the server can


def test_an_acknowledged_allocations_files_wait_for_the_start_under_way(
    tmp_path: Path, held: tuple[HeldContext, str]
) -> None:
    context, url = held
    node = Hello(agent_id="a1", slots=[Slot(id="0")])
    env = AgentEnv(
        agent_id="a1",
        master_url=url,
        work_root=tmp_path / "work",
        http=HttpSession(url),
        slots={"0": node.slots[0]},
        kill_grace=5.0,
    )
    digest = hashlib.sha256(context.data).hexdigest()

    async def scenario() -> None:
        procs = LocalProcesses(env, node)
        recorder = Recorder()
        await procs.open(recorder)
        first = start(node, "exit 0")
        second = replace(start(node, "sleep 30"), context=ContextRef(id=1, sha256=digest))
        await procs.start("a1", first)
        await recorder.wait_for(lambda r: bool(r.exits(first.allocation_id)), 30, "the exit")
        files = env.work_root / "allocations" / first.allocation_id
        assert files.is_dir()
        await procs.start("a1", second)  # held downloading its context
        await procs.acknowledge("a1", first.allocation_id)
        await asyncio.sleep(0.5)
        assert files.is_dir(), "removed while the next start was being unpacked"
        context.released.set()
        await recorder.wait_for(lambda r: r.started(second.allocation_id), 30, "the start")
        deadline = time.monotonic() + 10
        while files.exists() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert not files.exists(), "never removed"
        await procs.kill_all()
        await procs.close()

    asyncio.run(scenario())
