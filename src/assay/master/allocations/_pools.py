"""The pools a resource manager runs (``type: slurm``, ``type: kubernetes``).

Each such pool's manager is opened when the master starts. Its nodes join the master as agents
do, through the same gateway (:class:`AgentGateway`): their hellos are reconciled with what the
database says runs there, the scheduler places work on them, and what they report is taken as
an agent's messages. So recovery, gangs, kills and log ingest are one code path for every
kind of pool; only the executor differs (:mod:`assay.rm`).
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
from assay.protocol import AckExit, AgentMessage, Hello, Kill, Start, master_message
from assay.rm import KubernetesManager, ResourceManager, SlurmManager, SlurmPool

log = logging.getLogger(__name__)

RETRY_MAX = 30.0


class ManagedPools:
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
        self.managers: dict[str, ResourceManager] = {}
        self._opening: set[asyncio.Task[None]] = set()

    def build(self, pool: ResourcePoolConfig) -> ResourceManager:
        """The manager of a pool that is not the agents'."""
        token = self.gateway.token or ""
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
        """Open each managed pool's manager in the background: a batch system that cannot be
        reached yet is retried (and said so in the log) without holding the master's start."""
        for pool in self.settings.resource_pools:
            if pool.type == "agents":
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

    async def _attach(self, manager: ResourceManager, hello: Hello) -> None:
        node = hello.agent_id

        async def deliver(raw: dict[str, Any]) -> None:
            message = master_message(raw)
            if isinstance(message, Start):
                await manager.start(node, message)
            elif isinstance(message, Kill):
                await manager.kill(node, message.allocation_id)
            elif isinstance(message, AckExit):
                await manager.acknowledge(node, message.allocation_id)
            # A welcome or a refusal is for a process at the other end of a socket.

        await self.gateway.connected(hello, deliver)

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
        for manager in self.managers.values():
            await manager.close()
