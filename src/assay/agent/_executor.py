"""The agents' resource manager: each allocation as processes (or a container) of this host.

:class:`LocalProcesses` is what an agent does with the master's messages, apart from the
WebSocket that carries them (:mod:`assay.agent._daemon`): it implements
:class:`assay.rm.ResourceManager` for the one node the agent is, and runs the conformance kit
(:mod:`assay.rm.testing`) in-process like every other implementation.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from dataclasses import replace

from assay.agent._runner import AgentEnv, AllocationRunner
from assay.protocol import (
    AgentMessage,
    Exited,
    Hello,
    LogEntry,
    Logs,
    Report,
    Start,
    Started,
    Welcome,
)
from assay.protocol import trace_mark as mark

LOG_BATCH = 500
REMOVAL_WAITS_AT_MOST = 10.0
"""Seconds an ended allocation's files wait for starts under way before they are removed."""


class LocalProcesses:
    """Allocations as process groups of this host (containers where the start names an image
    and the agent has a runtime). Its one node is the agent; :attr:`node` is its hello before
    ``running`` and ``exited`` are filled in."""

    def __init__(self, env: AgentEnv, node: Hello) -> None:
        self.env = env
        self.node = node
        self.runners: dict[str, AllocationRunner] = {}
        self.unacked_exits: dict[str, Exited] = {}
        self.killed_early: set[str] = set()
        self.ended_with_agent: set[str] = set()
        """Allocations :meth:`kill_all` ended: their exits say so."""
        self._report: Report | None = None
        self._lines: deque[LogEntry] = deque()
        self._lines_ready = asyncio.Event()
        self._flusher: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._starting: set[str] = set()
        """Allocations being unpacked and spawned (until started, or ended without)."""
        self._none_starting = asyncio.Event()
        self._none_starting.set()
        self._removals: set[asyncio.Task[None]] = set()

    def hello(self) -> Hello:
        return replace(
            self.node,
            running=[a for a in self.runners if a not in self.unacked_exits],
            exited=list(self.unacked_exits.values()),
        )

    async def open(self, report: Report) -> list[Hello]:
        self._report = report
        if self._flusher is None:
            self._flusher = asyncio.create_task(self._flush_lines())
        return [self.hello()]

    async def start(self, node: str, message: Start) -> None:
        alloc_id = message.allocation_id
        if alloc_id in self.runners:
            return
        runner = AllocationRunner(
            self.env, message, on_log=self._on_log, on_start=self._on_start, on_exit=self._on_exit
        )
        self.runners[alloc_id] = runner
        self._starting.add(alloc_id)
        self._none_starting.clear()
        if alloc_id in self.killed_early:
            runner.killing = True  # it reports its exit as killed without starting a process
        self._spawn(self._run(runner))

    async def _run(self, runner: AllocationRunner) -> None:
        try:
            await runner.run()
        finally:
            self._started(runner.allocation_id)  # however it went: removals wait no longer

    async def kill(self, node: str, allocation_id: str, *, now: bool = False) -> None:
        """End the allocation: SIGTERM, SIGKILL after the grace; ``now``: SIGKILL at once
        (the master has given it up)."""
        runner = self.runners.get(allocation_id)
        if runner is None:
            # A kill can overtake its start (they leave the master from different tasks):
            # remember it, and end the allocation when the start arrives.
            self.killed_early.add(allocation_id)
        elif allocation_id not in self.unacked_exits:
            self._spawn(runner.kill(now=now))

    async def acknowledge(self, node: str, allocation_id: str) -> None:
        self.unacked_exits.pop(allocation_id, None)
        self.killed_early.discard(allocation_id)
        done = self.runners.pop(allocation_id, None)
        if done is not None:
            removal = asyncio.create_task(self._remove_files(done))
            self._removals.add(removal)
            removal.add_done_callback(self._removals.discard)

    async def _remove_files(self, done: AllocationRunner) -> None:
        # After the starts under way: the master sends a slot's next start just ahead of this
        # acknowledgement, and unpacking and spawning it is the gap between the two trials.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._none_starting.wait(), REMOVAL_WAITS_AT_MOST)
        await asyncio.to_thread(done.remove_files)

    async def welcome(self, node: str, message: Welcome) -> None:
        """Nothing to tell: this executor's processes are its own."""

    async def close(self) -> None:
        """Stop reporting. The processes run on, as children of this agent: an agent that is
        stopping ends them first with :meth:`kill_all`."""
        self._report = None
        # Ended allocations' files, removed before the agent goes (nothing starts now).
        self._none_starting.set()
        await asyncio.gather(*self._removals, return_exceptions=True)
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flusher
            self._flusher = None

    async def kill_all(self) -> None:
        """End every allocation (the agent is stopping) and wait until each has reported its
        exit, as ended with its agent (:attr:`Exited.lost`): not the trial's own failure."""
        runners = list(self.runners.values())
        self.ended_with_agent.update(r.allocation_id for r in runners)
        await asyncio.gather(*(r.kill() for r in runners), return_exceptions=True)

    async def fail(self, allocation_id: str, trial_id: int | None, reason: str) -> None:
        """End an allocation whose start could not even be read, with the reason in its log."""
        if isinstance(trial_id, int):
            line = f"assay agent {self.node.agent_id}: could not start the trial: {reason}"
            self._on_log(LogEntry(allocation_id, trial_id, line, stream="stderr", time=time.time()))
        await self._on_exit(allocation_id, 1, f"could not start: {reason}")

    def _spawn(self, work: object) -> None:
        task: asyncio.Task[None] = asyncio.create_task(work)  # type: ignore[arg-type]
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(self, message: AgentMessage) -> None:
        report = self._report
        if report is not None:
            await report(self.node.agent_id, message)

    def _started(self, alloc_id: str) -> None:
        """The allocation is no longer starting: it runs, or it ended without."""
        self._starting.discard(alloc_id)
        if not self._starting:
            self._none_starting.set()

    async def _on_start(self, alloc_id: str) -> None:
        self._started(alloc_id)
        await self._send(Started(alloc_id))

    def _on_log(self, entry: LogEntry) -> None:
        self._lines.append(entry)
        if len(self._lines) == 1 or len(self._lines) >= LOG_BATCH:
            self._lines_ready.set()

    async def _on_exit(self, alloc_id: str, code: int | None, reason: str) -> None:
        await self._drain_lines()
        if alloc_id in self.ended_with_agent:
            event = Exited(alloc_id, code, f"agent {self.node.agent_id} stopped", lost=True)
        else:
            event = Exited(alloc_id, code, reason)
        self.unacked_exits[alloc_id] = event
        await self._send(event)
        mark("agent-exit-sent", alloc_id)

    async def _flush_lines(self) -> None:
        while True:
            await self._lines_ready.wait()
            self._lines_ready.clear()
            await self._drain_lines()

    async def _drain_lines(self) -> None:
        # Until it is opened the lines wait: nothing would take them.
        while self._lines and self._report is not None:
            count = min(LOG_BATCH, len(self._lines))
            batch = [self._lines.popleft() for _ in range(count)]
            await self._send(Logs(batch))
