"""The agent side of the master: admitting agents, agreeing with them on what runs after a
(re)connect, their messages, repeated kills, and agents lost for good.

Every agent presents the cluster's agent token: the one the master is given (``agent_token`` in
its configuration, or ``ASSAY_AGENT_TOKEN``), else the one made on the cluster's first start and
kept in its database (and in ``ASSAY_HOME/agent-token``, for agents started with the master's
home). Until the master has loaded it, no agent is admitted.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from assay import rest
from assay.config import MasterConfig
from assay.db import Session, agents, cluster
from assay.errors import Conflict, InvalidRequest, Unauthorized
from assay.files import write_private
from assay.master.experiments import HarnessService
from assay.master.kernel import (
    AgentConnection,
    AgentStarted,
    AllocationKind,
    Held,
    Orchestrator,
    Sender,
    Tx,
    Wake,
    exit_reason,
    kind_of,
    kinds_of,
)
from assay.protocol import (
    AGENT_TOKEN_FILE,
    AckExit,
    AgentMessage,
    Exited,
    Heartbeat,
    Hello,
    Kill,
    LogEntry,
    Logs,
    Preempt,
    RelayedReports,
    ReportsAck,
    Started,
    UnknownMessage,
    Welcome,
    agent_message,
)
from assay.protocol import trace_mark as mark

log = logging.getLogger(__name__)

SETTLE_LIMITS = 4
"""At most this many ``agent_lost_after_seconds`` after a restart, an agent that never came
back is lost even while others are still arriving (agents that keep reconnecting must not hold
a lost machine's work forever)."""


class AgentGateway:
    def __init__(
        self,
        core: Orchestrator,
        settings: MasterConfig,
        kinds: Sequence[AllocationKind],
        harness: HarnessService,
    ) -> None:
        self.core = core
        self.harness = harness
        """Where the metric reports agents relay for their trials go."""
        self._relaying: set[asyncio.Task[None]] = set()
        self.settings = settings
        self.kinds = tuple(kinds)
        """Every kind of work whose allocations agents run (trials, tasks...)."""
        self.token: str | None = None
        """What agents must present; None (no agent admitted) until :meth:`load_token`."""
        self._swept = False
        """Whether :meth:`reap_lost` has looked at every live allocation since this master
        started (agents that never came back are known to no connection)."""
        self._reaped: dict[str, float] = {}
        """Agents whose loss was dealt with: when each was disconnected then."""

    async def load_token(self, home: Path) -> None:
        """Take the configured agent token, else the cluster's (made and stored on the first
        start); keep the cluster's in ``home/agent-token`` (0600) for local agents, and say
        where it is (never the token itself) in the log."""
        path = home / AGENT_TOKEN_FILE
        if self.settings.agent_token:
            self.token = self.settings.agent_token
            # A token this master made before would now be the wrong one for a local agent.
            await asyncio.to_thread(path.unlink, missing_ok=True)
            log.info(
                "agents must present the agent token this master was given (`assay up` keeps "
                "it in ASSAY_HOME/run/agent-token)"
            )
            return
        candidate = secrets.token_urlsafe(32)
        token, made = await self.core.record(lambda s: cluster.agent_token(s, candidate))
        await asyncio.to_thread(write_private, path, token)
        self.token = token
        log.info(
            "agents must present the cluster's agent token (%s); it is in %s, which agents "
            "started with --home %s read; give it to others with --token or ASSAY_AGENT_TOKEN",
            "made now" if made else "kept in the database",
            path,
            home,
        )

    def is_agent_token(self, token: str | None) -> bool:
        """Whether ``token`` is this cluster's agent token (agents fetch contexts with it)."""
        expected = self.token
        return bool(
            expected and token and secrets.compare_digest(token.encode(), expected.encode())
        )

    def check(self, hello: Hello | dict[str, Any]) -> Hello:
        """The agent's hello, if this master can take the agent; else raises with the reason
        it is told. The token comes first: an agent without it learns nothing of the cluster
        (not its pools, nor which agents it has)."""
        hello = hello if isinstance(hello, Hello) else Hello.from_dict(hello)
        agent_id = hello.agent_id
        if not self.is_agent_token(hello.token):
            given = "a wrong agent token" if hello.token else "no agent token"
            # Its id as a quoted, bounded string: it comes from an unknown peer and goes to
            # the master's log.
            raise Unauthorized(
                f"agent {agent_id[:100]!r} did not present this cluster's agent token "
                f"({given} given): start it with --token TOKEN or ASSAY_AGENT_TOKEN=TOKEN "
                "(`assay master` keeps it in its ASSAY_HOME/agent-token, `assay up` in "
                "ASSAY_HOME/run/agent-token)"
            )
        self._admissible(hello)
        pool = self.settings.pool(hello.pool)
        if pool is not None and pool.type != "agents":
            raise InvalidRequest(
                f"agent {agent_id} asked to join resource pool {hello.pool!r}, whose nodes "
                f"{pool.type.capitalize()} runs; start the agent with --pool naming a pool of "
                "type: agents"
            )
        return hello

    def _admissible(self, hello: Hello) -> None:
        """Refuse an agent for an unknown pool, or one taking the id of an agent connected now
        (the default id is the host name, so cloned machines collide): the connected one and
        its trials keep running. The same agent process reconnecting (its old connection not
        yet seen to drop) presents the same session and is taken."""
        agent_id = hello.agent_id
        pools = [p.pool_name for p in self.settings.resource_pools]
        if hello.pool not in pools:
            # Only the pools an agent may join: the others' nodes are Slurm's or Kubernetes'.
            open_to_agents = [
                p.pool_name for p in self.settings.resource_pools if p.type == "agents"
            ]
            raise InvalidRequest(
                f"agent {agent_id} asked to join resource pool {hello.pool!r}, which this master "
                f"does not have; its pools of agents: {', '.join(open_to_agents) or 'none'} "
                "(start the agent with --pool NAME)"
            )
        live = self.core.hub.live_session(agent_id)
        if live is not None and (not hello.session or live != hello.session):
            raise Conflict(
                f"an agent with id {agent_id!r} is connected already; give this one another id "
                "with --id NAME"
            )

    async def connected(self, hello: Hello | dict[str, Any], send: Sender) -> AgentConnection:
        """Register an agent. The API hands over the hello :meth:`check` took (the token is
        the network's question); a raw one from within the master is only parsed and checked
        for its pool and id. Raises :class:`Conflict` when another process took the id since."""
        if not isinstance(hello, Hello):
            hello = Hello.from_dict(hello)
            self._admissible(hello)
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
                container_runtime=hello.container_runtime,
            )
            return bool(row.enabled)

        async with self.core.lock:
            # Checked again under the lock, with nothing written yet: two processes with one id
            # can both pass the check before either is registered.
            self._admissible(hello)
            enabled = await self.core.record(record)
            # What this agent should be running, read before it can be given anything new: an
            # allocation started after this point is not in its hello and must not look lost.
            held = await self.core.db.run(lambda s: self._held_by(s, agent_id))
            conn = self.core.hub.register(hello, send, enabled, now)
            # Told once the hub has it: the pages read "connected" from the hub.
            self.core.events.publish(rest.EventBatch(cluster=True))
        try:
            # Before anything else, the Welcome included: whatever the master gave up on while
            # the agent was away (frozen, cut off) may have a replacement running elsewhere.
            await self._fence(conn, hello, held)
            await send(Welcome(self.core.cluster_id, relay=True))
            await self._reconcile(conn, hello, held)
        except BaseException:
            # Its socket went while it was being taken: it is gone, as after any drop (its
            # work is reaped if it does not come back).
            await self.disconnected(conn)
            raise
        self.core.wakeup.set()
        return conn

    def _held_by(self, session: Session, agent_id: str) -> list[tuple[AllocationKind, Held]]:
        return [(kind, h) for kind in self.kinds for h in kind.held_by(session, agent_id)]

    async def _fence(
        self, conn: AgentConnection, hello: Hello, held: list[tuple[AllocationKind, Held]]
    ) -> None:
        """Kill at once (no grace) each allocation the agent still runs that the master has
        given up on: ended, unknown, or recorded as lost on this agent. Its token was revoked
        when it ended, so it can report nothing; this stops what it would still write."""
        agent_id = conn.view.id
        live = {h.allocation_id for _, h in held}
        for alloc_id in sorted(set(hello.running) - live):
            log.warning(
                "agent %s still runs allocation %s, which the master has given up on; killed",
                agent_id,
                alloc_id,
            )
            await conn.send(Kill(alloc_id, fenced=True))

    async def _reconcile(
        self, conn: AgentConnection, hello: Hello, held: list[tuple[AllocationKind, Held]]
    ) -> None:
        """After a (re)connect, agree with the agent on which allocations are still alive."""
        agent_id = conn.view.id
        running = set(hello.running)
        exited = {e.allocation_id: e for e in hello.exited}
        for kind, h in held:
            if h.allocation_id in exited:
                continue
            if h.allocation_id in running:
                if not h.started:
                    # Its "started" was lost with the old connection: recorded with the other
                    # starts heard meanwhile.
                    await self.core.transact_merged(
                        self._started_many, AgentStarted(h.allocation_id, agent_id)
                    )
                if h.kill_due:
                    await conn.send(Kill(h.allocation_id))
                elif h.preempt:  # its trial watches through this agent, which may not know
                    await conn.send(Preempt(h.allocation_id))
            else:
                await self.core.transact(
                    _lost(kind),
                    agent_id,
                    h.allocation_id,
                    f"agent {agent_id} no longer runs it after reconnecting",
                )
        for event in exited.values():
            await self.on_message(agent_id, event)

    async def disconnected(self, conn: AgentConnection) -> None:
        now = self.core.clock()
        if self.core.hub.disconnect(conn.view.id, conn.generation, now):
            await self.core.record(lambda s: agents.disconnected(s, conn.view.id, now))
            self.core.events.publish(rest.EventBatch(cluster=True))

    async def on_message(self, agent_id: str, raw: AgentMessage | dict[str, Any]) -> None:
        """Act on a message from a connected agent: an :class:`AgentMessage`, or its JSON."""
        await self.on_messages(agent_id, [raw])

    async def on_messages(
        self, agent_id: str, raws: Sequence[AgentMessage | dict[str, Any]]
    ) -> None:
        """Act on messages from a connected agent, in order; log lines of messages in a row are
        stored together (an agent's lines that came while the ones before were being stored:
        one write each kept a busy master's agents a round behind per message)."""
        lines: list[LogEntry] = []
        for raw in raws:
            msg = self._read(agent_id, raw)
            if msg is None:
                continue
            self.core.hub.heard(agent_id, self.core.clock())
            if isinstance(msg, Logs):
                lines += msg.entries
                continue
            if lines:
                await self._ingest_logs(lines)
                lines = []
            await self._act(agent_id, msg)
        if lines:
            await self._ingest_logs(lines)

    def _read(self, agent_id: str, raw: AgentMessage | dict[str, Any]) -> AgentMessage | None:
        """The message (None: one that cannot be read, logged)."""
        if not isinstance(raw, dict):
            return raw
        try:
            return agent_message(raw)
        except UnknownMessage:
            log.warning("agent %s sent an unknown message type %r", agent_id, raw.get("type"))
        except InvalidRequest as exc:
            # One garbled message; the agent and its other messages are still good.
            log.warning("agent %s sent a message that cannot be read: %s", agent_id, exc)
        return None

    async def _act(self, agent_id: str, msg: AgentMessage) -> None:
        if isinstance(msg, Started):
            # With every other agent's starts meanwhile: a pass starts hundreds at once.
            await self.core.transact_merged(
                self._started_many, AgentStarted(msg.allocation_id, agent_id, msg.address)
            )
        elif isinstance(msg, Exited):
            mark("master-exit-received", msg.allocation_id)
            await self._on_exit(agent_id, msg)
            await self.core.hub.send(agent_id, AckExit(msg.allocation_id))
        elif isinstance(msg, Logs):
            await self._ingest_logs(msg.entries)
        elif isinstance(msg, RelayedReports):
            # Stored beside the connection's other messages, not ahead of them: a batch waits
            # for the database, an exit or a start must not wait behind it.
            task = asyncio.create_task(self._relay(agent_id, msg))
            self._relaying.add(task)
            task.add_done_callback(self._relaying.discard)
        elif isinstance(msg, Heartbeat):
            pass
        else:
            log.warning("agent %s sent %r after its hello; ignored", agent_id, msg.type)

    async def _relay(self, agent_id: str, msg: RelayedReports) -> None:
        outcomes = await self.harness.relayed(msg.batches)
        if self.core.hub.is_connected(agent_id):
            # An agent gone meanwhile sends the batches again once it is back.
            await self.core.hub.send(agent_id, ReportsAck(msg.seq, outcomes))

    async def _on_exit(self, agent_id: str, msg: Exited) -> None:
        try:
            # With every other agent's exits meanwhile, and one scheduling pass for them all:
            # a large cluster's trials end by the dozen each second.
            await self.core.transact_merged(self._exited_many, (agent_id, msg), schedule=True)
        except Exception as exc:
            if not msg.logs:
                raise
            # Whatever its lines hold that the database refuses, they never hold the exit back.
            log.warning(
                "the last lines of allocation %s could not be stored with its exit (%s); the "
                "exit is recorded without them",
                msg.allocation_id,
                exc,
            )
            await self.core.transact(self._exited, agent_id, replace(msg, logs=[]), schedule=True)
            try:
                await self._ingest_logs(msg.logs)
            except Exception as again:
                log.warning("allocation %s's last lines are lost: %s", msg.allocation_id, again)

    def _started_many(self, tx: Tx, starts: list[AgentStarted]) -> list[None]:
        kinds = kinds_of(self.kinds, tx.session, [s.allocation_id for s in starts])
        for kind in self.kinds:
            mine = [s for s in starts if kinds.get(s.allocation_id) is kind]
            if mine:
                kind.started(tx, mine)
        return [None] * len(starts)

    def _exited_many(self, tx: Tx, items: list[tuple[str, Exited]]) -> list[None]:
        for agent_id, msg in items:
            self._exited(tx, agent_id, msg)
        return [None] * len(items)

    def _exited(self, tx: Tx, agent_id: str, msg: Exited) -> None:
        """The agent's report of an allocation's exit, its last lines stored first (the pass
        that may follow runs in the same transaction)."""
        kind = kind_of(self.kinds, tx.session, msg.allocation_id)
        if kind is None:
            log.warning(
                "agent %s reported the exit of unknown allocation %s", agent_id, msg.allocation_id
            )
            return
        msg = replace(msg, reason=exit_reason(self.kinds, tx.session, msg))
        if msg.logs:
            new = kind.exit_is_new(tx.session, agent_id, msg.allocation_id)
            for key in self._store_lines(tx.session, msg.logs, unless_stored=not new):
                tx.act(Wake(key))
        kind.exited(tx, agent_id, msg.allocation_id, msg.exit_code, msg.reason, lost=msg.lost)
        # Before the pass that may follow in the same transaction (for the B1 timeline).
        mark("master-exit-recorded", msg.allocation_id)

    async def _ingest_logs(self, entries: list[LogEntry]) -> None:
        if entries:
            # With every other agent's lines that came meanwhile: one insert for them all.
            for key in await self.core.record_merged(self._write_lines, entries):
                self.core.waiters.notify(key)
            times = [e.time for e in entries if e.time]
            oldest = min(times, default=None)
            self.core.measures.count_ingested("logs", len(entries), oldest, self.core.clock())

    def _write_lines(
        self, session: Session, batches: list[list[LogEntry]]
    ) -> list[list[tuple[Any, ...]]]:
        woken = self._store_lines(session, [entry for batch in batches for entry in batch])
        return [woken, *([] for _ in batches[1:])]

    def _store_lines(
        self, session: Session, entries: list[LogEntry], *, unless_stored: bool = False
    ) -> list[tuple[Any, ...]]:
        """Store log lines, each allocation's masked with its job's secrets, by the kind that
        owns it; the followers to wake.

        ``unless_stored``: the lines of an exit the master had recorded already, skipped where
        the allocation's last stored line is their last (an agent repeats an exit until the
        master acknowledges it, so its lines may have been stored with it; an exit the master
        recorded otherwise, its agent lost, still gets them)."""
        by_allocation: dict[str, list[LogEntry]] = {}
        for entry in entries:
            by_allocation.setdefault(entry.allocation_id, []).append(entry)
        owner = kinds_of(self.kinds, session, list(by_allocation))
        for alloc_id, lines in by_allocation.items():
            if alloc_id not in owner:
                log.warning("%d log lines of unknown allocation %s dropped", len(lines), alloc_id)
        woken: list[tuple[Any, ...]] = []
        for kind in self.kinds:
            mine = {a: lines for a, lines in by_allocation.items() if owner.get(a) is kind}
            if not mine:
                continue
            for key in kind.store_lines(session, mine, unless_stored=unless_stored):
                if key not in woken:
                    woken.append(key)
        return woken

    async def resend_kills(self) -> None:
        """Kills are messages and can be lost (a dropped connection, a master restart): repeat
        them until the allocation has ended."""
        hub = self.core.hub
        for kind in self.kinds:
            for h in await self.core.read(kind.live):
                if not h.kill_due:
                    continue
                for agent_id in h.agents:
                    if hub.is_connected(agent_id):
                        await hub.send(agent_id, Kill(h.allocation_id))

    async def reap_lost(self) -> None:
        """End the allocations' parts on agents gone longer than ``agent_lost_after_seconds``.

        Runs every second, so it reads the live allocations only when one could be lost: once
        the storm after this master's start has settled (for agents that never came back),
        then when a connection the hub knows has been gone past the limit. Work is only placed
        on connected agents, so no other agent can hold any.

        An agent that never came back to a restarted master is lost once none has come back
        for the limit (at most ``SETTLE_LIMITS`` limits after the start): a large cluster's
        agents come back over a minute or more, as the master admits them, and one still
        waiting its turn is not lost (benchmark B13: at 500 agents, an agent admitted 30 s
        after the start had its trial given up and started twice)."""
        now = self.core.clock()
        limit = self.settings.agent_lost_after_seconds
        hub = self.core.hub
        started = self.core.started_at
        if now - started < limit:
            return
        settled = min(max(started, hub.last_admitted_at), started + SETTLE_LIMITS * limit)
        sweep = not self._swept and now - settled >= limit
        gone = {
            agent_id: conn.disconnected_at
            for agent_id, conn in hub.agents.items()
            if not conn.connected
            and conn.disconnected_at is not None
            and now - conn.disconnected_at >= limit
            and self._reaped.get(agent_id) != conn.disconnected_at
        }
        if not sweep and not gone:
            return
        for kind in self.kinds:
            for h in await self.core.read(kind.live):
                for agent_id in h.agents:
                    if hub.is_connected(agent_id):
                        continue
                    since = hub.disconnected_since(agent_id)
                    if since is None and not (sweep or self._swept):
                        continue  # never back: the sweep's, once the storm settled
                    if now - (settled if since is None else since) >= limit:
                        await self.core.transact(
                            _lost(kind), agent_id, h.allocation_id, f"agent {agent_id} was lost"
                        )
        self._swept = self._swept or sweep
        self._reaped.update(gone)


def _lost(kind: AllocationKind) -> Callable[[Tx, str, str, str], None]:
    """A handler ending an allocation's part on an agent that lost it."""

    def handler(tx: Tx, agent_id: str, allocation_id: str, reason: str) -> None:
        kind.exited(tx, agent_id, allocation_id, None, reason, lost=True)

    return handler
