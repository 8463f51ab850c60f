"""Every resource pool, each behind its resource manager (:mod:`assay.rm`): the agents'
pools behind :class:`AgentSockets`, Slurm's and Kubernetes' behind theirs.

The managers are opened when the master starts. A node joins through the one gateway
(:class:`AgentGateway`), whichever manager it comes from: an agent when its socket connects
(:meth:`ResourcePools.join`), a Slurm or Kubernetes node when its manager finds it. Its hello
is reconciled with what the database says runs there, the scheduler places work on it, what
it reports is taken as one message stream, and everything the master tells it goes through
its manager's ``start``, ``kill``, ``acknowledge`` and ``welcome``. So recovery, gangs, kills
and log ingest are one code path for every kind of pool; only the executor differs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from assay.config import MasterConfig, ResourcePoolConfig, SlurmPoolConfig
from assay.errors import AssayError, one_line
from assay.master.allocations._gateway import AgentGateway
from assay.master.kernel import AgentConnection, Sender
from assay.protocol import (
    AckExit,
    AgentMessage,
    Hello,
    Kill,
    MasterMessage,
    Preempt,
    ReportsAck,
    Start,
    Welcome,
)
from assay.rm import (
    AgentSockets,
    KubernetesManager,
    ResourceManager,
    SlurmManager,
    SlurmPool,
    SocketSend,
)

log = logging.getLogger(__name__)

RETRY_MAX = 30.0


class ResourcePools:
    def __init__(
        self,
        settings: MasterConfig,
        gateway: AgentGateway,
        master_url: Callable[[], str],
        home: Path,
    ) -> None:
        self.settings = settings
        self.gateway = gateway
        self.master_url = master_url
        self.home = home
        self.sockets = AgentSockets()
        """The manager of every agents' pool: each agent is one socket."""
        self.managers: dict[str, ResourceManager] = {}
        self._opening: set[asyncio.Task[None]] = set()

    def build(self, pool: ResourcePoolConfig) -> ResourceManager:
        """The manager of a pool."""
        token = self.gateway.token or ""
        if pool.type == "agents":
            return self.sockets
        if pool.type == "slurm":
            settings = pool.slurm or SlurmPoolConfig()
            return SlurmManager(
                SlurmPool(
                    name=pool.pool_name,
                    settings=settings,
                    work_dir=settings.work_dir or self.home / "slurm" / pool.pool_name,
                    master_url=settings.master_url or self.master_url(),
                    agent_token=token,
                )
            )
        # The client (an optional extra) is imported only here, for a Kubernetes pool.
        return KubernetesManager.for_pool(pool, self.master_url(), token)

    async def open(self) -> None:
        """Open each pool's manager in the background: a batch system that cannot be reached
        yet is retried (and said so in the log) without holding the master's start."""
        await self.sockets.open(partial(self._report, self.sockets))
        for pool in self.settings.resource_pools:
            if pool.type == "agents":
                self.managers[pool.pool_name] = self.sockets
                continue
            try:
                manager = self.build(pool)
            except AssayError as exc:
                log.error("resource pool %s (%s): %s", pool.pool_name, pool.type, one_line(exc))
                continue
            self.managers[pool.pool_name] = manager
            task = asyncio.create_task(self._open(pool, manager))
            self._opening.add(task)
            task.add_done_callback(self._opening.discard)

    async def _open(self, pool: ResourcePoolConfig, manager: ResourceManager) -> None:
        delay = 1.0
        warned = False
        while True:
            try:
                nodes = await manager.open(partial(self._report, manager))
                break
            except (AssayError, OSError) as exc:
                if not warned:
                    hint = (
                        " (the master runs Slurm's commands as its own user, with its "
                        "environment's SLURM_CONF)"
                        if pool.type == "slurm"
                        else ""
                    )
                    log.error(
                        "resource pool %s (%s) cannot be opened: %s%s; retrying",
                        pool.pool_name,
                        pool.type,
                        one_line(exc),
                        hint,
                    )
                    warned = True
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX)
        log.info(
            "resource pool %s (%s): %d node(s): %s",
            pool.pool_name,
            pool.type,
            len(nodes),
            ", ".join(n.agent_id for n in nodes),
        )
        for hello in nodes:
            await self._attach(manager, hello)

    async def join(
        self, hello: Hello | dict[str, Any], socket: SocketSend
    ) -> tuple[AgentConnection, Callable[[], None]]:
        """An agent connected over its socket: link the socket to the agents' manager, then
        take the agent through the gateway. Returns its connection and the unlink for when
        the socket closes. The API checks the hello's token first; one given as a dict (from
        within the master) is only checked for its pool and id."""
        node = hello.agent_id if isinstance(hello, Hello) else str(hello.get("agent_id", ""))
        unlink = self.sockets.link(node, socket)
        try:
            conn = await self.gateway.connected(hello, _deliver(self.sockets, node))
        except BaseException:
            unlink()
            raise
        return conn, unlink

    async def _attach(self, manager: ResourceManager, hello: Hello) -> None:
        await self.gateway.connected(hello, _deliver(manager, hello.agent_id))

    async def _report(
        self, manager: ResourceManager, node: str, message: AgentMessage | Hello
    ) -> None:
        if isinstance(message, Hello):
            await self._attach(manager, message)
        else:
            await self.gateway.on_message(node, message)

    async def close(self) -> None:
        """Stop watching; what runs keeps running, for the next master to find."""
        for task in list(self._opening):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for manager in {id(m): m for m in self.managers.values()}.values():
            await manager.close()


def _deliver(manager: ResourceManager, node: str) -> Sender:
    """How the master's messages for ``node`` reach it: through its pool's manager."""

    async def deliver(message: MasterMessage) -> None:
        if isinstance(message, Start):
            await manager.start(node, message)
        elif isinstance(message, Kill):
            await manager.kill(node, message.allocation_id, now=message.fenced)
        elif isinstance(message, AckExit):
            await manager.acknowledge(node, message.allocation_id)
        elif isinstance(message, Welcome):
            await manager.welcome(node, message)
        elif isinstance(message, ReportsAck | Preempt) and isinstance(manager, AgentSockets):
            # Only an agent relays for its trials (a Slurm or Kubernetes node's trials send
            # their own reports and long-poll their preemption): down its socket.
            await manager.relay(node, message)
        # A refusal is the socket route's own answer, before a node is taken.

    return deliver
