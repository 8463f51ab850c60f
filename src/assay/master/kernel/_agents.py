"""The agent hub: the nodes connected now (agents, and the nodes of Slurm and Kubernetes pools),
and how to reach each: through its pool's resource manager."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from assay.protocol import Hello, MasterMessage, Slot

log = logging.getLogger(__name__)

Sender = Callable[[MasterMessage], Awaitable[None]]
"""Delivers a message to one node: its pool's manager carries it out (an agent's, over its
socket)."""


@dataclass(frozen=True)
class AgentView:
    """What the scheduler needs of a connected agent."""

    id: str
    pool: str
    slots: tuple[Slot, ...]
    labels: frozenset[str] = frozenset()
    enabled: bool = True
    address: str = ""
    cpu: float = 0.0
    memory_mb: int = 0
    container_runtime: str = ""
    user: str = ""
    """The account its processes run as (:attr:`Hello.user`)."""


@dataclass
class AgentConnection:
    view: AgentView
    send: Sender
    connected: bool = True
    disconnected_at: float | None = None
    version: str = ""
    session: str = ""
    """The agent process's :attr:`Hello.session`: how its reconnect is told from a second
    process with the same id."""
    generation: int = 0
    """Bumped on each reconnect, so a stale connection's clean-up does not undo a newer one."""
    frameworks: dict[str, bool] = field(default_factory=dict)
    """Which training frameworks its trials can import (:attr:`Hello.frameworks`): checked
    against an entrypoint's imports at submission."""
    extra: dict[str, Any] = field(default_factory=dict)
    heard_at: float = 0.0
    """When the agent last sent anything (its hello, a heartbeat every few seconds, any
    message). Kept here, not written per heartbeat: the database has the time it connected
    and disconnected."""


class AgentHub:
    def __init__(self) -> None:
        self.agents: dict[str, AgentConnection] = {}
        self._generation = 0
        self.last_admitted_at = 0.0
        """When an agent last connected (a restarted master's storm is settling while they
        still arrive)."""
        self.changes = 0
        """Bumped whenever what :meth:`connected_views` gives changes: what is worked out from
        it is worked out again only then."""

    def register(
        self, hello: Hello, send: Sender, enabled: bool = True, now: float = 0.0
    ) -> AgentConnection:
        view = AgentView(
            id=hello.agent_id,
            pool=hello.pool,
            slots=tuple(hello.slots),
            labels=frozenset(hello.labels),
            enabled=enabled,
            address=hello.address,
            cpu=hello.cpu,
            memory_mb=hello.memory_mb,
            container_runtime=hello.container_runtime,
            user=hello.user,
        )
        self._generation += 1
        conn = AgentConnection(
            view=view,
            send=send,
            version=hello.version,
            session=hello.session,
            generation=self._generation,
            heard_at=now,
            frameworks=dict(hello.frameworks),
        )
        self.agents[view.id] = conn
        self.last_admitted_at = max(self.last_admitted_at, now)
        self.changes += 1
        return conn

    def disconnect(self, agent_id: str, generation: int, now: float) -> bool:
        conn = self.agents.get(agent_id)
        if conn is None or conn.generation != generation:
            return False
        conn.connected = False
        conn.disconnected_at = now
        self.changes += 1
        return True

    def connected_views(self) -> list[AgentView]:
        return [c.view for c in self.agents.values() if c.connected]

    def live_session(self, agent_id: str) -> str | None:
        """The :attr:`Hello.session` of the agent connected now with this id; None if none is."""
        conn = self.agents.get(agent_id)
        return conn.session if conn is not None and conn.connected else None

    def heard(self, agent_id: str, now: float) -> None:
        conn = self.agents.get(agent_id)
        if conn is not None and conn.connected:
            conn.heard_at = max(conn.heard_at, now)

    def last_heard(self, agent_id: str) -> float | None:
        """When the connected agent last sent anything; None while it is not connected."""
        conn = self.agents.get(agent_id)
        return conn.heard_at if conn is not None and conn.connected else None

    def is_connected(self, agent_id: str) -> bool:
        conn = self.agents.get(agent_id)
        return conn is not None and conn.connected

    def disconnected_since(self, agent_id: str) -> float | None:
        conn = self.agents.get(agent_id)
        if conn is None:
            return None
        return None if conn.connected else conn.disconnected_at

    def set_enabled(self, agent_id: str, enabled: bool) -> None:
        conn = self.agents.get(agent_id)
        if conn is not None:
            conn.view = replace(conn.view, enabled=enabled)
            self.changes += 1

    async def send(self, agent_id: str, message: MasterMessage) -> bool:
        conn = self.agents.get(agent_id)
        if conn is None or not conn.connected:
            log.warning("cannot send %s to agent %s: not connected", message.type, agent_id)
            return False
        try:
            await conn.send(message)
        except Exception as exc:  # a dying socket; the disconnect handler cleans up
            log.warning("sending %s to agent %s failed: %s", message.type, agent_id, exc)
            return False
        return True
