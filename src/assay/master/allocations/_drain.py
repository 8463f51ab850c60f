"""Stopping the cluster without losing work (``assay down``): every running trial is asked to
checkpoint and exit, and nothing new starts until a master starts again.

The intent is written first: each live allocation's preemption reason is set to
``CLUSTER_STOP`` in one transaction, so however its trial ends from then on (its own clean
exit, the kill after the grace, its agent stopped or lost, this master killed meanwhile), the
exit is recorded as the cluster's stop, not the trial's failure: the trial is queued again
with no restart counted and resumes from its latest checkpoint. Nothing new starts for a while
after each ask (the time the agents need to be stopped); a ``down`` abandoned midway leaves the
master scheduling again after that.
"""

from __future__ import annotations

import asyncio

from assay import rest
from assay.db import Session, allocations
from assay.master.experiments import lifecycle as life
from assay.master.kernel import Orchestrator, Tx
from assay.protocol import PreemptReason

POLL_SECONDS = 0.1
HOLD_SECONDS = 60.0
"""How long after its last answer a drain keeps new work from starting: long enough for the
agents to be stopped, killing what outlived the grace, without its trial starting again."""


def _preempt_all(tx: Tx) -> list[int]:
    live = allocations.live(tx.session)
    for alloc in live:
        life.request_preemption(tx, alloc, PreemptReason.CLUSTER_STOP)
    return sorted({alloc.trial_id for alloc in live})


def _running_trials(session: Session) -> list[int]:
    return sorted({alloc.trial_id for alloc in allocations.live(session)})


class ClusterDrain:
    def __init__(self, core: Orchestrator) -> None:
        self.core = core

    async def drain(self, wait_seconds: float) -> rest.DrainStatus:
        """Stop starting work, ask every running trial to checkpoint and exit, and wait up to
        ``wait_seconds`` for them to go. Asked again, it asks again (a trial started just
        before the first call is caught by the second)."""
        # Before the transaction: a pass already under way may still start a trial, and the
        # transaction, run after it under the lock, preempts that one too.
        core = self.core
        core.draining_until = max(core.draining_until, core.clock() + wait_seconds + HOLD_SECONDS)
        running = await self.core.transact(_preempt_all)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_seconds
        while running and loop.time() < deadline and not self.core.stopping:
            await asyncio.sleep(POLL_SECONDS)
            running = await self.core.read(_running_trials)
        core.draining_until = max(core.draining_until, core.clock() + HOLD_SECONDS)
        return rest.DrainStatus(running_trials=running)
