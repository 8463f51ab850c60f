"""What users do to experiments, trials and the queue: submit, pause, activate, cancel, kill,
archive, change resources and queue places, and wait for an experiment to end."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from assay.config import MasterConfig
from assay.db import Session, experiments
from assay.master import _jobs as jobs
from assay.master import _lifecycle as life
from assay.master._orchestrator import Orchestrator
from assay.master._submit import Submission, create_experiment, validate_submission
from assay.master._tx import Tx
from assay.protocol import ExperimentState
from assay.scheduler import JobUpdate


class ExperimentCommands:
    def __init__(
        self,
        core: Orchestrator,
        settings: MasterConfig,
        assay_home: Path,
        waiting_jobs: Callable[[], set[str]],
    ) -> None:
        self.core = core
        self.settings = settings
        self.assay_home = assay_home
        self._waiting_jobs = waiting_jobs

    async def submit(self, sub: Submission) -> int:
        """Validate and create an experiment; its id."""
        valid = await asyncio.to_thread(validate_submission, sub, self.settings, self.assay_home)

        def handler(tx: Tx) -> int:
            return create_experiment(tx, valid, self.settings).id

        return await self.core.transact(handler)

    async def pause(self, experiment_id: int) -> None:
        await self.core.transact(life.pause_experiment, experiment_id)

    async def activate(self, experiment_id: int) -> None:
        await self.core.transact(life.activate_experiment, experiment_id)

    async def cancel(self, experiment_id: int) -> None:
        await self.core.transact(life.cancel_experiment, experiment_id)

    async def kill(self, experiment_id: int) -> None:
        await self.core.transact(life.kill_experiment, experiment_id)

    async def set_archived(self, experiment_id: int, archived: bool) -> None:
        await self.core.transact(life.set_archived, experiment_id, archived)

    async def kill_trial(self, trial_id: int) -> None:
        await self.core.transact(life.kill_trial, trial_id)

    async def list_jobs(self, pool: str | None) -> dict[str, Any]:
        name = pool or self.settings.default_compute_pool
        waiting = set(self._waiting_jobs())
        return await self.core.read(lambda s: jobs.list_jobs(s, name, self.settings, waiting))

    async def update_jobs(self, updates: list[JobUpdate]) -> list[str]:
        return await self.core.transact(jobs.update_jobs, updates, self.settings)

    async def set_resource(self, experiment_id: int, field: str, value: Any) -> None:
        await self.core.transact(
            jobs.update_experiment_resources, experiment_id, field, value, self.settings
        )

    async def wait(self, experiment_id: int, timeout: float) -> str:
        """Wait up to ``timeout`` seconds for the experiment to end; return its state."""
        key = ("experiment", experiment_id)
        since = self.core.waiters.version(key)

        def state(session: Session) -> ExperimentState:
            return ExperimentState(experiments.require(session, experiment_id).state)

        current = await self.core.read(state)
        if current.terminal:
            return current
        await self.core.wait(key, since, timeout)
        return await self.core.read(state)
