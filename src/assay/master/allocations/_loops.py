"""The master's loops: scheduling passes (when woken, at least every second) and the
once-a-second chores (autoscaling, lost agents, preemption timeouts, time limits, repeated
kills)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from assay.config import MasterConfig
from assay.db import Session
from assay.master.allocations._autoscaler import Autoscaler
from assay.master.allocations._gateway import AgentGateway
from assay.master.allocations._scheduling import PassResult, schedule_pass
from assay.master.experiments import enforce_time_limits
from assay.master.experiments import lifecycle as life
from assay.master.kernel import AgentView, Orchestrator, Tx
from assay.protocol import trace_mark as mark

log = logging.getLogger(__name__)

SLOW_PASS_SECONDS = 0.5
"""A scheduling pass longer than this is logged with its figures (the queue waits meanwhile)."""


class Loops:
    def __init__(
        self,
        core: Orchestrator,
        settings: MasterConfig,
        agents: AgentGateway,
        autoscaler: Autoscaler,
    ) -> None:
        self.core = core
        self.settings = settings
        self.agents = agents
        self.autoscaler = autoscaler
        self.waiting_jobs: set[str] = set()
        """Jobs holding a reservation after the last pass (they start when slots free)."""
        self._tasks: list[asyncio.Task[None]] = []
        self._preemption_timeouts = {
            p.pool_name: float(p.preemption_timeout) for p in settings.resource_pools
        }
        core.scheduler = self

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._scheduling(), name="scheduler"),
            asyncio.create_task(self._chores(), name="lost-agent-reaper"),
        ]
        self.core.wakeup.set()

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def schedule_once(self) -> PassResult:
        if self.core.draining:
            # The trials the stop sent back to the queue wait for the next master.
            return PassResult()
        agents = self.core.hub.connected_views()
        began = time.perf_counter()
        result = await self.core.transact(
            schedule_pass, agents, self.settings, self.core.cluster_id, self.agents.kinds
        )
        took = time.perf_counter() - began
        self.core.measures.scheduling_pass.observe(took)
        if took > SLOW_PASS_SECONDS:
            log.warning(
                "a scheduling pass took %.2f s (%d agents; %d allocations started, %d preempted)",
                took,
                len(agents),
                len(result.started),
                len(result.preempted),
                extra={
                    "seconds": round(took, 4),
                    "agents": len(agents),
                    "started": len(result.started),
                    "preempted": len(result.preempted),
                },
            )
        self.committed(result)
        return result

    def pass_in(self, tx: Tx, agents: list[AgentView]) -> PassResult:
        """A pass inside another transaction (one that freed slots)."""
        return schedule_pass(tx, agents, self.settings, self.core.cluster_id, self.agents.kinds)

    def committed(self, result: PassResult) -> None:
        """A pass's transaction committed: the jobs it left holding reservations."""
        self.waiting_jobs = result.waiting_jobs

    async def _scheduling(self) -> None:
        wakeup = self.core.wakeup
        while not self.core.stopping:
            woken = True
            try:
                await asyncio.wait_for(wakeup.wait(), timeout=1.0)
            except TimeoutError:
                woken = False
            wakeup.clear()
            try:
                if not woken and not await self.core.read(self._anything_to_place):
                    # The once-a-second pass, with nothing queued: a read, not a transaction.
                    self.waiting_jobs = set()
                    continue
                mark("master-pass-begins", "-")
                await self.schedule_once()
            except Exception:
                log.exception("scheduling pass failed")
                await asyncio.sleep(0.5)

    def _anything_to_place(self, session: Session) -> bool:
        """Whether any kind of work waits for slots (else a pass has nothing to do)."""
        return any(kind.waiting(session) for kind in self.agents.kinds)

    async def _enforce_preemption_timeouts(self) -> None:
        await self.core.transact(life.enforce_preemption_timeouts, self._preemption_timeouts)

    async def _enforce_time_limits(self) -> None:
        await self.core.transact(enforce_time_limits)

    async def _prune_waiters(self) -> None:
        self.core.waiters.prune()

    async def _chores(self) -> None:
        ticks = 0
        while not self.core.stopping:
            await asyncio.sleep(1.0)
            ticks += 1
            steps: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
                ("autoscaling", self.autoscaler.step),
                ("checking for lost agents", self.agents.reap_lost),
                ("enforcing preemption timeouts", self._enforce_preemption_timeouts),
                ("enforcing time limits", self._enforce_time_limits),
            ]
            if ticks % 5 == 0:
                steps.append(("repeating kills", self.agents.resend_kills))
            if ticks % 60 == 0:
                steps.append(("pruning long-poll records", self._prune_waiters))
            for what, step in steps:
                try:
                    await step()
                except Exception:
                    log.exception("%s failed", what)
