"""The conformance kit every resource manager runs (the contract of
:class:`assay.rm.ResourceManager`, point by point).

Each check is a coroutine function taking a :class:`Subject`: how to open the manager under
test (a second call stands for the master after a restart, over the same executor) and how
long its work may take to start. A test runs them all::

    @pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
    def test_conforms(check):
        asyncio.run(check(Subject(open_manager=..., )))

The allocations are small shell commands with no context, so a manager needs no master to
run them; what a manager adds around them (a container, a Slurm job, a pod) is its own.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from assay.protocol import (
    AgentMessage,
    ClusterInfo,
    Exited,
    Hello,
    Logs,
    ResourceManager,
    Start,
    Started,
)

Opener = Callable[[], Awaitable[ResourceManager]]


@dataclass
class Subject:
    open_manager: Opener
    """A manager of the executor under test, not yet opened. Called again after a manager was
    closed, it stands for a restarted master: the work started before is still there."""
    timeout: float = 60.0
    """How long an allocation may take to start and to end (a batch system queues)."""
    env: dict[str, str] = field(default_factory=dict)
    """Variables every start carries besides the check's own (say, where the master is)."""


class Recorder:
    """What a manager reports, in order, with waits on it."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, AgentMessage | Hello]] = []
        self._changed = asyncio.Condition()

    async def __call__(self, node: str, message: AgentMessage | Hello) -> None:
        async with self._changed:
            self.messages.append((node, message))
            self._changed.notify_all()

    async def wait_for(
        self, what: Callable[[Recorder], bool], timeout: float, describe: str
    ) -> None:
        async def until() -> None:
            async with self._changed:
                await self._changed.wait_for(lambda: what(self))

        try:
            await asyncio.wait_for(until(), timeout)
        except TimeoutError:
            raise AssertionError(
                f"after {timeout:.0f} s the manager had not reported {describe}; it reported: "
                + "; ".join(f"{node}: {_show(m)}" for node, m in self.messages[-20:])
            ) from None

    def exits(self, allocation_id: str) -> list[Exited]:
        return [
            m
            for _, m in self.messages
            if isinstance(m, Exited) and m.allocation_id == allocation_id
        ]

    def started(self, allocation_id: str) -> bool:
        return any(
            isinstance(m, Started) and m.allocation_id == allocation_id for _, m in self.messages
        )

    def lines(self, allocation_id: str) -> list[tuple[str, str]]:
        """(stream, line) of the allocation's output, in the order reported."""
        return [
            (e.stream, e.line)
            for _, m in self.messages
            if isinstance(m, Logs)
            for e in m.entries
            if e.allocation_id == allocation_id
        ]


def _show(message: AgentMessage | Hello) -> str:
    if isinstance(message, Logs):
        return f"logs({len(message.entries)} lines)"
    if isinstance(message, Exited):
        return f"exited({message.allocation_id}, {message.exit_code}, {message.reason!r})"
    if isinstance(message, Started):
        return f"started({message.allocation_id})"
    return message.type


def start(node: Hello, command: str, env: dict[str, str] | None = None) -> Start:
    """A start of ``command`` (run by bash) on one of the node's slots, with a fresh id."""
    allocation_id = f"kit-{secrets.token_hex(4)}"
    slots = [node.slots[0].id] if node.slots else []
    return Start(
        allocation_id=allocation_id,
        trial_id=0,
        experiment_id=0,
        run=1,
        context=None,
        entrypoint=["bash", "-c", command],
        env=dict(env or {}),
        slots=slots,
        cluster_info=ClusterInfo(
            master_url="",
            cluster_id="conformance",
            agent_id=node.agent_id,
            slot_ids=slots,
            task_id=allocation_id,
            allocation_id=allocation_id,
            session_token="",
            task_type="COMMAND",
            latest_checkpoint=None,
        ),
    )


async def _opened(subject: Subject) -> tuple[ResourceManager, Recorder, Hello]:
    manager = await subject.open_manager()
    recorder = Recorder()
    nodes = await manager.open(recorder)
    assert nodes, "open() offered no node: the master could place nothing on this manager"
    for hello in nodes:
        assert hello.agent_id, "a node without an id"
    with_slots = [n for n in nodes if n.slots]
    assert with_slots, "no node offers a slot: the scheduler could place nothing"
    return manager, recorder, with_slots[0]


async def _ended(recorder: Recorder, allocation_id: str, timeout: float) -> Exited:
    await recorder.wait_for(
        lambda r: bool(r.exits(allocation_id)), timeout, f"{allocation_id}'s exit"
    )
    (exit_event,) = recorder.exits(allocation_id)
    return exit_event


async def _printed(recorder: Recorder, allocation_id: str, text: str, timeout: float) -> None:
    await recorder.wait_for(
        lambda r: any(line == text for _, line in r.lines(allocation_id)),
        timeout,
        f"the line {text!r} from {allocation_id}",
    )


async def an_allocation_runs_reports_its_output_and_exit_code(subject: Subject) -> None:
    manager, recorder, node = await _opened(subject)
    try:
        message = start(
            node,
            'echo "out $KIT_WORD"; echo "err line" >&2; exit 3',
            {**subject.env, "KIT_WORD": "reached"},
        )
        await manager.start(node.agent_id, message)
        exited = await _ended(recorder, message.allocation_id, subject.timeout)
        assert exited.exit_code == 3, f"exit code {exited.exit_code}, expected 3"
        assert recorder.started(message.allocation_id), "no 'started' before the exit"
        lines = recorder.lines(message.allocation_id)
        assert ("stdout", "out reached") in lines, f"stdout lines: {lines}"
        assert ("stderr", "err line") in lines, f"stderr lines: {lines}"
        started_at = next(
            i
            for i, (_, m) in enumerate(recorder.messages)
            if isinstance(m, Started) and m.allocation_id == message.allocation_id
        )
        exited_at = next(i for i, (_, m) in enumerate(recorder.messages) if m is exited)
        assert started_at < exited_at, "'started' came after the exit"
        await manager.acknowledge(node.agent_id, message.allocation_id)
    finally:
        await manager.close()


async def _trapping_sigterm(
    manager: ResourceManager, recorder: Recorder, node: Hello, subject: Subject
) -> Start:
    """A running allocation that says ``stopping`` and exits 7 on SIGTERM."""
    message = start(
        node,
        "trap 'echo stopping; exit 7' TERM; echo ready; while true; do sleep 0.1; done",
        subject.env,
    )
    await manager.start(node.agent_id, message)
    await _printed(recorder, message.allocation_id, "ready", subject.timeout)
    return message


async def a_kill_sends_sigterm_so_the_process_can_stop_cleanly(subject: Subject) -> None:
    manager, recorder, node = await _opened(subject)
    try:
        message = await _trapping_sigterm(manager, recorder, node, subject)
        await manager.kill(node.agent_id, message.allocation_id)
        exited = await _ended(recorder, message.allocation_id, subject.timeout)
        assert exited.exit_code == 7, f"exit code {exited.exit_code} after SIGTERM, expected 7"
        assert ("stdout", "stopping") in recorder.lines(message.allocation_id)
        await manager.acknowledge(node.agent_id, message.allocation_id)
    finally:
        await manager.close()


async def a_kill_now_gives_no_grace(subject: Subject) -> None:
    manager, recorder, node = await _opened(subject)
    try:
        message = await _trapping_sigterm(manager, recorder, node, subject)
        await manager.kill(node.agent_id, message.allocation_id, now=True)
        exited = await _ended(recorder, message.allocation_id, subject.timeout)
        assert exited.exit_code != 7, "a kill with now=True let the SIGTERM handler run"
        assert ("stdout", "stopping") not in recorder.lines(message.allocation_id)
        await manager.acknowledge(node.agent_id, message.allocation_id)
    finally:
        await manager.close()


async def a_kill_that_overtakes_its_start_runs_nothing(subject: Subject) -> None:
    manager, recorder, node = await _opened(subject)
    try:
        message = start(node, "echo ran", subject.env)
        await manager.kill(node.agent_id, message.allocation_id)
        await manager.start(node.agent_id, message)
        exited = await _ended(recorder, message.allocation_id, subject.timeout)
        assert exited.exit_code != 0, "an allocation killed before its start exited with 0"
        assert ("stdout", "ran") not in recorder.lines(message.allocation_id)
        await manager.acknowledge(node.agent_id, message.allocation_id)
    finally:
        await manager.close()


async def a_second_start_and_a_stray_kill_change_nothing(subject: Subject) -> None:
    manager, recorder, node = await _opened(subject)
    try:
        await manager.kill(node.agent_id, "kit-never-started")
        message = start(node, "sleep 1; echo once", subject.env)
        await manager.start(node.agent_id, message)
        await manager.start(node.agent_id, message)
        exited = await _ended(recorder, message.allocation_id, subject.timeout)
        assert exited.exit_code == 0
        assert recorder.lines(message.allocation_id).count(("stdout", "once")) == 1
        await manager.acknowledge(node.agent_id, message.allocation_id)
        await asyncio.sleep(1.0)
        assert len(recorder.exits(message.allocation_id)) == 1, "a second exit was reported"
        assert not recorder.exits("kit-never-started")
    finally:
        await manager.close()


async def allocations_run_side_by_side(subject: Subject) -> None:
    manager, recorder, node = await _opened(subject)
    try:
        marker = f"/tmp/kit-{secrets.token_hex(4)}"
        # Each waits for the other's file: they finish only if both run at once.
        wait = "touch {0}.{1}; while [ ! -e {0}.{2} ]; do sleep 0.1; done; rm -f {0}.{2}"
        first = start(node, wait.format(marker, "a", "b"), subject.env)
        second = start(node, wait.format(marker, "b", "a"), subject.env)
        for message in (first, second):
            await manager.start(node.agent_id, message)
        for message in (first, second):
            exited = await _ended(recorder, message.allocation_id, subject.timeout)
            assert exited.exit_code == 0
            await manager.acknowledge(node.agent_id, message.allocation_id)
    finally:
        await manager.close()


async def a_reopened_manager_finds_running_and_unacknowledged_work(subject: Subject) -> None:
    manager, recorder, node = await _opened(subject)
    long = start(
        node, "echo first; while [ ! -e stop-now ]; do sleep 0.1; done; echo second", subject.env
    )
    short = start(node, "exit 5", subject.env)
    try:
        await manager.start(node.agent_id, long)
        await manager.start(node.agent_id, short)
        await _printed(recorder, long.allocation_id, "first", subject.timeout)
        await _ended(recorder, short.allocation_id, subject.timeout)
    finally:
        await manager.close()

    again = await subject.open_manager()
    later = Recorder()
    nodes = {n.agent_id: n for n in await again.open(later)}
    try:
        assert node.agent_id in nodes, f"node {node.agent_id} is gone after reopening"
        hello = nodes[node.agent_id]
        assert long.allocation_id in hello.running, (
            f"the running allocation is not in the reopened hello's running: {hello.running}"
        )
        unacked = {e.allocation_id: e for e in hello.exited}
        assert short.allocation_id in unacked, (
            "an exit never acknowledged is not in the reopened hello's exited"
        )
        assert unacked[short.allocation_id].exit_code == 5
        await again.acknowledge(node.agent_id, short.allocation_id)
        await again.kill(node.agent_id, long.allocation_id)
        exited = await _ended(later, long.allocation_id, subject.timeout)
        assert exited.exit_code != 0, "the killed allocation exited with 0"
        await again.acknowledge(node.agent_id, long.allocation_id)
    finally:
        await again.close()

    third = await subject.open_manager()
    try:
        (hello,) = [n for n in await third.open(Recorder()) if n.agent_id == node.agent_id]
        held = set(hello.running) | {e.allocation_id for e in hello.exited}
        assert not held & {long.allocation_id, short.allocation_id}, (
            f"acknowledged allocations are still held: {held}"
        )
    finally:
        await third.close()


CHECKS: tuple[Callable[[Subject], Coroutine[Any, Any, None]], ...] = (
    an_allocation_runs_reports_its_output_and_exit_code,
    a_kill_sends_sigterm_so_the_process_can_stop_cleanly,
    a_kill_now_gives_no_grace,
    a_kill_that_overtakes_its_start_runs_nothing,
    a_second_start_and_a_stray_kill_change_nothing,
    allocations_run_side_by_side,
    a_reopened_manager_finds_running_and_unacknowledged_work,
)
"""Every check of the contract, in the order of its points."""

__all__ = ["CHECKS", "Recorder", "Subject", "start"]
