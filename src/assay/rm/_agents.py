"""The agents' pools (``type: agents``): assay's own agents, each a process that dials the
master's WebSocket and runs its allocations with :class:`assay.agent.LocalProcesses`.

Seen from the master, this is a resource manager like Slurm's or Kubernetes': the master
starts, kills and acknowledges through the same protocol for every pool. Only where a node
comes from differs: Slurm's and Kubernetes' nodes are found when their manager opens; an agent
arrives on its own, whenever its socket connects, and is linked here for as long as it stays.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from assay.protocol import (
    AckExit,
    Hello,
    Kill,
    MasterMessage,
    Preempt,
    Report,
    ReportsAck,
    Start,
    Welcome,
)

SocketSend = Callable[[dict[str, Any]], Awaitable[None]]
"""Writes one JSON message to an agent's socket."""


class AgentGone(ConnectionError):
    """The agent has no socket now (it disconnected); what was for it is not delivered."""


class AgentSockets:
    """The :class:`~assay.protocol.ResourceManager` of every agents' pool.

    Each method writes the agent protocol's message to the node's socket; the agent's own
    executor carries it out there and reports back over the same socket.
    """

    def __init__(self) -> None:
        self._sockets: dict[str, SocketSend] = {}

    async def open(self, report: Report) -> list[Hello]:
        """No node yet: agents connect when they start, each with its own hello (received by
        the master's socket route, which links it here)."""
        return []

    def link(self, node: str, send: SocketSend) -> Callable[[], None]:
        """Deliver ``node``'s messages to this socket from now on. Returns the unlink for when
        the socket closes; it leaves alone a newer socket the same agent reconnected with."""
        self._sockets[node] = send

        def unlink() -> None:
            if self._sockets.get(node) is send:
                del self._sockets[node]

        return unlink

    async def start(self, node: str, message: Start) -> None:
        await self._send(node, message)

    async def kill(self, node: str, allocation_id: str, *, now: bool = False) -> None:
        await self._send(node, Kill(allocation_id, fenced=now))

    async def acknowledge(self, node: str, allocation_id: str) -> None:
        await self._send(node, AckExit(allocation_id))

    async def welcome(self, node: str, message: Welcome) -> None:
        await self._send(node, message)

    async def relay(self, node: str, message: ReportsAck | Preempt) -> None:
        """What the agent relays to its trials: what became of the metric reports it carried
        for them, or that one of them is asked to stop."""
        await self._send(node, message)

    async def close(self) -> None:
        """The sockets are the web server's: they close with it, and the agents reconnect to
        the next master."""

    async def _send(self, node: str, message: MasterMessage) -> None:
        send = self._sockets.get(node)
        if send is None:
            raise AgentGone(f"agent {node} is not connected")
        await send(message.to_dict())
