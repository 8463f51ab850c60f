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
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from assay import rest
from assay.config import MasterConfig
from assay.db import Allocation, Session, TaskInstance, agents, allocations, cluster, logs, tasks
from assay.errors import Conflict, InvalidRequest, Unauthorized
from assay.files import write_private
from assay.master.allocations import _gang as gang
from assay.master.allocations._secrets import LogMasker
from assay.master.experiments import lifecycle as life
from assay.master.kernel import AgentConnection, Orchestrator, Sender, Tx, Wake
from assay.master.tasks import lifecycle as task_life
from assay.protocol import (
    AGENT_TOKEN_FILE,
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
from assay.protocol import trace_mark as mark

log = logging.getLogger(__name__)


class AgentGateway:
    def __init__(self, core: Orchestrator, settings: MasterConfig) -> None:
        self.core = core
        self.settings = settings
        self.masker = LogMasker()
        self.token: str | None = None
        """What agents must present; None (no agent admitted) until :meth:`load_token`."""

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
            ours = await self.core.db.run(lambda s: allocations.on_agent(s, agent_id))
            instances = await self.core.db.run(lambda s: list(tasks.live_on_agent(s, agent_id)))
            conn = self.core.hub.register(hello, send, enabled, now)
            # Told once the hub has it: the pages read "connected" from the hub.
            self.core.events.publish(rest.EventBatch(cluster=True))
        # Before anything else, the Welcome included: whatever the master gave up on while the
        # agent was away (frozen, cut off) may have a replacement running elsewhere by now.
        await self._fence(conn, hello, ours, instances)
        await send(Welcome(self.core.cluster_id).to_dict())
        await self._reconcile(conn, hello, ours, instances)
        self.core.wakeup.set()
        return conn

    async def _fence(
        self,
        conn: AgentConnection,
        hello: Hello,
        ours: Sequence[Allocation],
        instances: Sequence[TaskInstance],
    ) -> None:
        """Kill at once (no grace) each allocation the agent still runs that the master has
        given up on: ended, unknown, or recorded as lost on this agent. Its token was revoked
        when it ended, so it can report nothing; this stops what it would still write."""
        agent_id = conn.view.id
        live = {a.id for a in ours if agent_id not in (a.exits or {})}
        live |= {i.allocation_id for i in instances if i.allocation_id}
        for alloc_id in sorted(set(hello.running) - live):
            log.warning(
                "agent %s still runs allocation %s, which the master has given up on; killed",
                agent_id,
                alloc_id,
            )
            await conn.send(Kill(alloc_id, fenced=True).to_dict())

    async def _reconcile(
        self,
        conn: AgentConnection,
        hello: Hello,
        ours: Sequence[Allocation],
        instances: Sequence[TaskInstance],
    ) -> None:
        """After a (re)connect, agree with the agent on which allocations are still alive."""
        agent_id = conn.view.id
        running = set(hello.running)
        exited = {e.allocation_id: e for e in hello.exited}
        for inst in instances:
            alloc_id = inst.allocation_id or ""
            if alloc_id in exited:
                continue
            if alloc_id in running:
                if not inst.started:
                    await self.core.transact(task_life.instance_started, alloc_id, agent_id)
                if inst.kill_requested:
                    await conn.send(Kill(alloc_id).to_dict())
            else:
                await self.core.transact(
                    task_life.instance_exited,
                    agent_id,
                    alloc_id,
                    None,
                    f"agent {agent_id} no longer runs it after reconnecting",
                )
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
                    partial(gang.agent_exited, lost=True),
                    agent_id,
                    alloc.id,
                    None,
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
        self.core.hub.heard(agent_id, self.core.clock())
        if isinstance(msg, Started):
            if task_life.task_of_allocation(msg.allocation_id) is not None:
                await self.core.transact(task_life.instance_started, msg.allocation_id, agent_id)
            else:
                await self.core.transact(life.allocation_started, msg.allocation_id, agent_id)
        elif isinstance(msg, Exited):
            mark("master-exit-received", msg.allocation_id)
            await self._on_exit(agent_id, msg)
            await self.core.hub.send(agent_id, AckExit(msg.allocation_id))
        elif isinstance(msg, Logs):
            await self._ingest_logs(msg.entries)
        elif isinstance(msg, Heartbeat):
            pass
        else:
            log.warning("agent %s sent %r after its hello; ignored", agent_id, msg.type)

    async def _on_exit(self, agent_id: str, msg: Exited) -> None:
        try:
            await self.core.transact(self._exited, agent_id, msg, schedule=True)
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

    def _exited(self, tx: Tx, agent_id: str, msg: Exited) -> None:
        """The agent's report of an allocation's exit, its last lines stored first (the pass
        that may follow runs in the same transaction)."""
        is_task = task_life.task_of_allocation(msg.allocation_id) is not None
        msg = replace(msg, reason=self._masked_reason(tx.session, msg))
        if msg.logs:
            new = (task_life.instance_exit_is_new if is_task else gang.exit_is_new)(
                tx.session, agent_id, msg.allocation_id
            )
            for key in self._store_lines(tx.session, msg.logs, unless_stored=not new):
                tx.act(Wake(key))
        if is_task:
            task_life.instance_exited(tx, agent_id, msg.allocation_id, msg.exit_code, msg.reason)
            return
        gang.agent_exited(tx, agent_id, msg.allocation_id, msg.exit_code, msg.reason, lost=msg.lost)
        # Before the pass that may follow in the same transaction (for the B1 timeline).
        mark("master-exit-recorded", msg.allocation_id)

    def _masked_reason(self, session: Session, msg: Exited) -> str:
        """The exit's reason with its job's secrets masked: a trial's process may have given
        it (the harness's failure line), and it becomes the trial's message."""
        if not msg.reason:
            return msg.reason
        task_id = task_life.task_of_allocation(msg.allocation_id)
        if task_id is not None:
            said = LogEntry(allocation_id=msg.allocation_id, trial_id=0, line=msg.reason)
            return self.masker.masked_for_task(session, task_id, [said])[0].line
        alloc = allocations.get(session, msg.allocation_id)
        if alloc is None:
            return msg.reason
        said = LogEntry(allocation_id=msg.allocation_id, trial_id=alloc.trial_id, line=msg.reason)
        return self.masker.masked(session, [said])[0].line

    async def _ingest_logs(self, entries: list[LogEntry]) -> None:
        if entries:
            for key in await self.core.record(lambda s: self._store_lines(s, entries)):
                self.core.waiters.notify(key)

    def _store_lines(
        self, session: Session, entries: list[LogEntry], *, unless_stored: bool = False
    ) -> list[tuple[str, int]]:
        """Store log lines, each job's masked with its secrets; the followers to wake.

        ``unless_stored``: the lines of an exit the master had recorded already, skipped for
        a trial or job whose last stored line is their last (an agent repeats an exit until the
        master acknowledges it, so its lines may have been stored with it; an exit the master
        recorded otherwise, its agent lost, still gets them)."""
        by_trial: dict[int, list[LogEntry]] = {}
        by_task: dict[int, list[LogEntry]] = {}
        for entry in entries:
            task_id = task_life.task_of_allocation(entry.allocation_id)
            if task_id is None:
                by_trial.setdefault(entry.trial_id, []).append(entry)
            else:
                by_task.setdefault(task_id, []).append(entry)
        woken: list[tuple[str, int]] = []
        for trial_id, lines in by_trial.items():
            masked = self.masker.masked(session, lines)
            if not (unless_stored and logs.ends_with(session, masked[-1], trial_id=trial_id)):
                logs.insert(session, masked)
                woken.append(("logs", trial_id))
        for task_id, lines in by_task.items():
            masked = self.masker.masked_for_task(session, task_id, lines)
            if not (unless_stored and logs.ends_with(session, masked[-1], task_id=task_id)):
                tasks.insert_logs(session, task_id, masked)
                woken.append(("task-logs", task_id))
        return woken

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
        for inst, _, _ in await self.core.read(tasks.live_instances):
            owner, alloc_id = inst.agent_id, inst.allocation_id
            if inst.kill_requested and owner and alloc_id and hub.is_connected(owner):
                await hub.send(owner, Kill(alloc_id))

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
                        partial(gang.agent_exited, lost=True),
                        agent_id,
                        alloc.id,
                        None,
                        f"agent {agent_id} was lost",
                    )
        for inst, _, _ in await self.core.read(tasks.live_instances):
            owner = inst.agent_id
            if not owner or not inst.allocation_id or hub.is_connected(owner):
                continue
            since = hub.disconnected_since(owner) or self.core.started_at
            if now - since >= limit:
                await self.core.transact(
                    task_life.instance_exited,
                    owner,
                    inst.allocation_id,
                    None,
                    f"agent {owner} was lost",
                )
