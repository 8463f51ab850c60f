"""The agent side of the master: admitting agents, agreeing with them on what runs after a
(re)connect, their messages, repeated kills, and agents lost for good."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Sequence
from typing import Any

from assay.config import MasterConfig
from assay.db import Allocation, Session, agents, allocations, logs
from assay.errors import InvalidRequest, Unauthorized
from assay.master import _gang as gang
from assay.master import _lifecycle as life
from assay.master._agents import AgentConnection, Sender
from assay.master._orchestrator import Orchestrator
from assay.master._secrets import LogMasker
from assay.protocol import (
    AckExit,
    AgentMessage,
    AllocationState,
    Exited,
    Heartbeat,
    Hello,
    Kill,
    LogEntry,
    Logs,
    Started,
    UnknownMessage,
    Welcome,
    agent_message,
)

log = logging.getLogger(__name__)


class AgentGateway:
    def __init__(self, core: Orchestrator, settings: MasterConfig) -> None:
        self.core = core
        self.settings = settings
        self.masker = LogMasker()

    def is_agent_token(self, token: str | None) -> bool:
        """Whether ``token`` is this cluster's agent token (agents fetch contexts with it)."""
        expected = self.settings.agent_token
        return bool(expected and token and secrets.compare_digest(token, expected))

    def check(self, hello: Hello | dict[str, Any]) -> Hello:
        """The agent's hello, if this master can take the agent; else raises with the reason
        it is told."""
        hello = hello if isinstance(hello, Hello) else Hello.from_dict(hello)
        agent_id = hello.agent_id
        expected = self.settings.agent_token
        if expected and not secrets.compare_digest(hello.token or "", expected):
            raise Unauthorized(
                f"agent {agent_id} did not present this cluster's agent token (give it with "
                "--token or ASSAY_AGENT_TOKEN)"
            )
        pool = hello.pool
        pools = [p.pool_name for p in self.settings.resource_pools]
        if pool not in pools:
            raise InvalidRequest(
                f"agent {agent_id} asked to join resource pool {pool!r}, which this master does "
                f"not have; its pools: {', '.join(pools)} (start the agent with --pool NAME)"
            )
        return hello

    async def connected(self, hello: Hello | dict[str, Any], send: Sender) -> AgentConnection:
        """Register an agent; a raw hello is :meth:`check`-ed first (the API hands over the one
        it already checked, to refuse the agent before accepting its socket)."""
        if not isinstance(hello, Hello):
            hello = self.check(hello)
        agent_id = hello.agent_id
        now = self.core.clock()

        def record(session: Session) -> bool:
            row = agents.connected(
                session,
                agent_id,
                pool=hello.pool,
                labels=hello.labels,
                slots=[s.to_dict() for s in hello.slots],
                address=hello.address,
                version=hello.version,
                now=now,
            )
            return bool(row.enabled)

        enabled = await self.core.record(record)
        async with self.core.lock:
            # What this agent should be running, read before it can be given anything new: an
            # allocation started after this point is not in its hello and must not look lost.
            ours = await self.core.db.run(lambda s: allocations.on_agent(s, agent_id))
            conn = self.core.hub.register(hello, send, enabled)
        await send(Welcome(self.core.cluster_id).to_dict())
        await self._reconcile(conn, hello, ours)
        self.core.wakeup.set()
        return conn

    async def _reconcile(
        self, conn: AgentConnection, hello: Hello, ours: Sequence[Allocation]
    ) -> None:
        """After a (re)connect, agree with the agent on which allocations are still alive."""
        agent_id = conn.view.id
        running = set(hello.running)
        exited = {e.allocation_id: e for e in hello.exited}
        for alloc in ours:
            if alloc.id in exited or agent_id in (alloc.exits or {}):
                continue
            if alloc.id in running:
                if alloc.state == AllocationState.ASSIGNED:
                    # Its "started" was lost with the old connection.
                    await self.core.transact(life.allocation_started, alloc.id, agent_id)
                if life.needs_kill(alloc):
                    await conn.send(Kill(alloc.id).to_dict())
            else:
                await self.core.transact(
                    gang.agent_exited,
                    agent_id,
                    alloc.id,
                    None,
                    f"agent {agent_id} no longer runs it after reconnecting",
                )
        for event in exited.values():
            await self.on_message(agent_id, event)
        known = {a.id for a in ours}
        for alloc_id in sorted(running - known):
            await conn.send(Kill(alloc_id).to_dict())

    async def disconnected(self, conn: AgentConnection) -> None:
        now = self.core.clock()
        if self.core.hub.disconnect(conn.view.id, conn.generation, now):
            await self.core.record(lambda s: agents.disconnected(s, conn.view.id, now))

    async def on_message(self, agent_id: str, raw: AgentMessage | dict[str, Any]) -> None:
        """Act on a message from a connected agent: an :class:`AgentMessage`, or its JSON."""
        if isinstance(raw, dict):
            try:
                msg = agent_message(raw)
            except UnknownMessage:
                log.warning("agent %s sent an unknown message type %r", agent_id, raw.get("type"))
                return
            except InvalidRequest as exc:
                # One garbled message; the agent and its other messages are still good.
                log.warning("agent %s sent a message that cannot be read: %s", agent_id, exc)
                return
        else:
            msg = raw
        if isinstance(msg, Started):
            await self.core.transact(life.allocation_started, msg.allocation_id, agent_id)
        elif isinstance(msg, Exited):
            await self.core.transact(
                gang.agent_exited, agent_id, msg.allocation_id, msg.exit_code, msg.reason
            )
            await self.core.hub.send(agent_id, AckExit(msg.allocation_id))
        elif isinstance(msg, Logs):
            await self._ingest_logs(msg.entries)
        elif isinstance(msg, Heartbeat):
            pass
        else:
            log.warning("agent %s sent %r after its hello; ignored", agent_id, msg.type)

    async def _ingest_logs(self, entries: list[LogEntry]) -> None:
        if not entries:
            return
        await self.core.record(lambda s: logs.insert(s, self.masker.masked(s, entries)))
        for trial_id in {e.trial_id for e in entries}:
            self.core.waiters.notify(("logs", trial_id))

    async def resend_kills(self) -> None:
        """Kills are messages and can be lost (a dropped connection, a master restart): repeat
        them until the allocation has ended."""
        hub = self.core.hub
        for alloc in await self.core.read(allocations.live):
            if not life.needs_kill(alloc):
                continue
            for agent_id in alloc.slots or {}:
                if agent_id not in (alloc.exits or {}) and hub.is_connected(agent_id):
                    await hub.send(agent_id, Kill(alloc.id))

    async def reap_lost(self) -> None:
        """Fail the allocations of agents gone longer than ``agent_lost_after_seconds``."""
        now = self.core.clock()
        limit = self.settings.agent_lost_after_seconds
        hub = self.core.hub
        for alloc in await self.core.read(allocations.live):
            for agent_id in alloc.slots or {}:
                if hub.is_connected(agent_id) or agent_id in (alloc.exits or {}):
                    continue
                since = hub.disconnected_since(agent_id) or self.core.started_at
                if now - since >= limit:
                    # Through the gang, so the allocation's processes on other agents stop too.
                    await self.core.transact(
                        gang.agent_exited, agent_id, alloc.id, None, f"agent {agent_id} was lost"
                    )
