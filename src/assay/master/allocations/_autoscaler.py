"""Autoscaling: pools with a ``provider`` grow when work waits and shrink when agents idle.

Each step reads the pool (queued demand, free slots, its instances), asks the pure
``decide_scaling``, records launches and terminations in the database, and only then runs the
provider's commands. An instance's agent connects with the instance's id, which is how the two
are matched.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
from collections.abc import Callable
from typing import Protocol

from assay.config import ProviderConfig, ResourcePoolConfig
from assay.db import agents, allocations, instances, trials
from assay.master.kernel import AgentView, Transactor, Tx
from assay.protocol import AGENT_TOKEN_ENV, LIVE_INSTANCE_STATES, InstanceState
from assay.scheduler import Instance as InstanceView
from assay.scheduler import ProviderSettings, decide_scaling

log = logging.getLogger(__name__)


class Agents(Protocol):
    """What the autoscaler needs of the connected agents."""

    def connected_views(self) -> list[AgentView]: ...

    def set_enabled(self, agent_id: str, enabled: bool) -> None: ...


class Autoscaler:
    """Scales ``pools`` (those with a provider); ``master_url`` is what launched instances'
    agents connect to, with the token ``agent_token`` answers (given to the provider's commands
    as ``ASSAY_AGENT_TOKEN``)."""

    def __init__(
        self,
        master: Transactor,
        agents: Agents,
        pools: list[ResourcePoolConfig],
        master_url: str,
        agent_token: Callable[[], str | None] = lambda: None,
    ) -> None:
        self.master = master
        self.agent_token = agent_token
        self.agents = agents
        self.pools = [p for p in pools if p.provider is not None]
        """The pools it scales: those with a provider."""
        self.master_url = master_url
        self._tasks: set[asyncio.Task[None]] = set()

    async def step(self) -> None:
        for pool in self.pools:
            await self._step_pool(pool)

    async def _step_pool(self, pool: ResourcePoolConfig) -> None:
        provider = pool.provider
        assert provider is not None
        connected = {a.id: a for a in self.agents.connected_views() if a.pool == pool.pool_name}

        def plan(tx: Tx) -> tuple[list[str], list[str]]:
            demand = sum(
                tx.searchers.config(exp).resources.slots_per_trial * n
                for exp, n in trials.queued_by_experiment(tx.session, pool.pool_name)
            )
            used = allocations.used_slots(tx.session)
            busy = set(used)
            free = sum(
                len([s for s in a.slots if s.id not in used.get(a.id, set())])
                for a in connected.values()
                if a.enabled
            )
            views = []
            for row in instances.of_pool(tx.session, pool.pool_name, LIVE_INSTANCE_STATES):
                if row.id in connected:
                    instances.seen_connected(tx.session, row, busy=row.id in busy, at=tx.now)
                views.append(
                    InstanceView(
                        id=row.id,
                        launched_at=row.launched_at,
                        agent_id=row.id if row.id in connected else None,
                        idle_since=row.idle_since if row.id in connected else None,
                    )
                )
            decision = decide_scaling(demand, free, _settings(provider), views, tx.now)
            launched = []
            for _ in range(decision.launch):
                instance_id = f"{pool.pool_name}-{secrets.token_hex(4)}"
                instances.launching(tx.session, instance_id, pool.pool_name, tx.now)
                launched.append(instance_id)
            for instance_id in decision.terminate:
                ending = instances.get(tx.session, instance_id)
                if ending is not None:
                    instances.mark_terminating(tx.session, ending)
                # Nothing new may start on a machine about to go away.
                agents.disable(tx.session, instance_id)
            return launched, list(decision.terminate)

        launched, terminated = await self.master.transact(plan)
        for instance_id in terminated:
            self.agents.set_enabled(instance_id, False)
        for instance_id in launched:
            log.info("launching instance %s for pool %s", instance_id, pool.pool_name)
            self._run(provider.launch_command, instance_id, pool, ending=False)
        for instance_id in terminated:
            log.info("terminating instance %s of pool %s", instance_id, pool.pool_name)
            self._run(provider.terminate_command, instance_id, pool, ending=True)

    def _run(
        self, command: str | list[str], instance_id: str, pool: ResourcePoolConfig, *, ending: bool
    ) -> None:
        task = asyncio.create_task(self._command(command, instance_id, pool, ending))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _command(
        self, command: str | list[str], instance_id: str, pool: ResourcePoolConfig, ending: bool
    ) -> None:
        provider = pool.provider
        assert provider is not None
        env = {
            **os.environ,
            "ASSAY_INSTANCE_ID": instance_id,
            "ASSAY_POOL": pool.pool_name,
            "ASSAY_MASTER": self.master_url,
            "ASSAY_SLOTS": str(provider.slots_per_instance),
        }
        token = self.agent_token()
        if token:
            env[AGENT_TOKEN_ENV] = token
        args = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
        try:
            proc = await asyncio.create_subprocess_exec(
                *args,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
            output, _ = await proc.communicate()
            code = proc.returncode
            text = output.decode(errors="replace").strip()[-2000:]
        except OSError as exc:
            code, text = None, str(exc)
        what = "terminate" if ending else "launch"
        if code != 0:
            log.warning("%s command for %s failed (%s): %s", what, instance_id, code, text)

        def record(tx: Tx) -> None:
            row = instances.get(tx.session, instance_id)
            if row is None:
                return
            if code != 0:
                instances.command_failed(
                    tx.session, row, message=f"{what} command exited {code}: {text}"
                )
            if ending:
                instances.mark_terminated(tx.session, row, at=tx.now)

        await self.master.transact(record)

    async def resume(self) -> None:
        """Terminate what a previous master decided to terminate but may not have."""
        pools = {p.pool_name: p for p in self.pools}

        def read(tx: Tx) -> list[tuple[str, str]]:
            rows = instances.of_pool(tx.session, None, (InstanceState.TERMINATING,))
            return [(row.id, row.pool) for row in rows]

        for instance_id, pool_name in await self.master.transact(read):
            pool = pools.get(pool_name)
            if pool is not None and pool.provider is not None:
                self._run(pool.provider.terminate_command, instance_id, pool, ending=True)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()


def _settings(provider: ProviderConfig) -> ProviderSettings:
    return ProviderSettings(
        slots_per_instance=provider.slots_per_instance,
        min_instances=provider.min_instances,
        max_instances=provider.max_instances,
        idle_timeout=float(provider.idle_timeout),
        startup_timeout=float(provider.startup_timeout),
    )
