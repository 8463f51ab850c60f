"""The conformance kit of the allocation seam: what every kind of work
(:class:`~assay.master.kernel.AllocationKind`) must do, checked through a real master's own paths
(its scheduling pass, its agents' gateway, its loops) with an in-process agent connection.

A kind's tests give a :class:`KindCase` (how to make one piece of its work wait, and how to read
its stored log lines) and call :func:`check_allocation_kind` with a master on a real database.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from assay.master._master import Master
from assay.master.kernel import AllocationKind, kind_of
from assay.protocol import Exited, LogEntry, Logs, Started


@dataclass(frozen=True)
class KindCase:
    kind: str
    """The kind's ``name`` among the master's kinds."""
    submit: Callable[[Master], Any]
    """Make one piece of this kind's work wait for a slot (a coroutine, or None)."""
    lines: Callable[[Master, str], list[str]]
    """The stored log lines of the work that allocation ``id`` runs."""


class AgentStandIn:
    """Stands in for an agent's WebSocket: keeps what the master sends."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def __call__(self, message: dict[str, Any]) -> None:
        self.sent.append(message)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [m for m in self.sent if m["type"] == kind]

    def starts(self) -> list[dict[str, Any]]:
        return self.of("start")


def _run(coro: Any) -> Any:
    return asyncio.run(coro) if asyncio.iscoroutine(coro) else coro


def _connect(master: Master, agent_id: str, running: list[str] | None = None) -> AgentStandIn:
    agent = AgentStandIn()
    hello = {
        "type": "hello",
        "agent_id": agent_id,
        "slots": [{"id": "0", "type": "cpu"}],
        "running": running or [],
    }
    _run(master.pools.join(hello, agent))
    return agent


def check_allocation_kind(master: Master, case: KindCase) -> None:
    """Every rule of the seam for ``case``'s kind; an ``AssertionError`` names the one broken."""
    kinds = master.agents.kinds
    kind = next((k for k in kinds if k.name == case.kind), None)
    assert kind is not None, f"the master has no kind {case.kind!r}"
    read = master.db.run_sync

    assert not read(kind.waiting), "nothing submitted, yet the kind says something waits"
    _run(case.submit(master))
    assert read(kind.waiting), "submitted work does not wait"

    agent = _connect(master, "kit-a1")
    _run(master.loops.schedule_once())
    starts = agent.of("start")
    assert len(starts) == 1, f"one piece of work on one slot: {len(starts)} starts sent"
    alloc_id = starts[0]["allocation_id"]
    assert not read(kind.waiting), "started work still waits"
    owner = read(lambda s: kind_of(kinds, s, alloc_id))
    assert owner is kind, f"allocation {alloc_id} is recorded as {getattr(owner, 'name', None)}'s"
    holders = [
        k.name
        for k in kinds
        if any(h.allocation_id == alloc_id for h in _held(master, k, "kit-a1"))
    ]
    assert holders == [case.kind], f"allocation {alloc_id} is held by {holders}"

    held = _held(master, kind, "kit-a1")
    assert [h.allocation_id for h in held] == [alloc_id]
    assert not held[0].started and not held[0].kill_due and held[0].agents == ("kit-a1",)

    _run(master.agents.on_message("kit-a1", Started(alloc_id)))
    assert _held(master, kind, "kit-a1")[0].started, "Started is not recorded"

    line = LogEntry(allocation_id=alloc_id, trial_id=0, line="kit: a line")
    _run(master.agents.on_message("kit-a1", Logs([line])))
    assert case.lines(master, alloc_id) == ["kit: a line"], "a shipped line is not stored once"

    # A master that lost the agent's Started (its connection dropped) hears of it in the hello.
    _run(master.agents.disconnected(master.hub.agents["kit-a1"]))
    again = _connect(master, "kit-a1", running=[alloc_id])
    assert not again.of("kill"), "a running allocation the master knows was killed on reconnect"
    assert [h.allocation_id for h in read(kind.live)] == [alloc_id]

    end = Exited(alloc_id, 0, logs=[LogEntry(allocation_id=alloc_id, trial_id=0, line="kit: last")])
    assert read(lambda s: kind.exit_is_new(s, "kit-a1", alloc_id))
    _run(master.agents.on_message("kit-a1", end))
    assert again.of("ack_exit"), "an exit is not acknowledged"
    assert not read(lambda s: kind.exit_is_new(s, "kit-a1", alloc_id)), "an exit is new twice"
    assert read(kind.live) == [] and _held(master, kind, "kit-a1") == []
    # An agent repeats an exit until it is acknowledged: the repeat changes nothing.
    _run(master.agents.on_message("kit-a1", end))
    assert case.lines(master, alloc_id) == ["kit: a line", "kit: last"]

    # An agent still running what the master has ended is told to kill it at once.
    _run(master.agents.disconnected(master.hub.agents["kit-a1"]))
    fenced = _connect(master, "kit-a1", running=[alloc_id])
    kills = fenced.of("kill")
    assert [k["allocation_id"] for k in kills] == [alloc_id] and kills[0].get("fenced")


def _held(master: Master, kind: AllocationKind, agent_id: str) -> list[Any]:
    return list(master.db.run_sync(lambda s: kind.held_by(s, agent_id)))


__all__ = ["AgentStandIn", "KindCase", "check_allocation_kind"]
