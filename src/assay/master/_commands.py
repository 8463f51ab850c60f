"""What users do to experiments, trials and the queue: submit, pause, activate, cancel, kill,
archive, change resources and queue places, and wait for an experiment to end."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from assay.config import MasterConfig
from assay.db import Experiment, Session, experiments
from assay.master import _jobs as jobs
from assay.master import _lifecycle as life
from assay.master._orchestrator import Orchestrator
from assay.master._submit import Submission, create_experiment, validate_submission
from assay.master._tx import Tx
from assay.master._views import ExperimentView, JobQueue, TrialView
from assay.protocol import ExperimentState
from assay.scheduler import JobUpdate


def _viewed(handler: Callable[..., Experiment]) -> Callable[..., ExperimentView]:
    """``handler``, answering with the experiment as its transaction leaves it."""

    def run(tx: Tx, *args: Any) -> ExperimentView:
        return ExperimentView.read(tx.session, handler(tx, *args))

    return run


class ExperimentCommands:
    """Each command runs in one transaction and answers with what it changed, read in that
    same transaction."""

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

    async def create(self, sub: Submission) -> ExperimentView:
        """Validate the submission (raising with every problem at once, creating nothing),
        then create the experiment and its first trials."""
        valid = await asyncio.to_thread(validate_submission, sub, self.settings, self.assay_home)

        def handler(tx: Tx) -> Experiment:
            return create_experiment(tx, valid, self.settings)

        return await self.core.transact(_viewed(handler))

    async def pause(self, experiment_id: int) -> ExperimentView:
        return await self.core.transact(_viewed(life.pause_experiment), experiment_id)

    async def activate(self, experiment_id: int) -> ExperimentView:
        return await self.core.transact(_viewed(life.activate_experiment), experiment_id)

    async def cancel(self, experiment_id: int) -> ExperimentView:
        return await self.core.transact(_viewed(life.cancel_experiment), experiment_id)

    async def kill(self, experiment_id: int) -> ExperimentView:
        return await self.core.transact(_viewed(life.kill_experiment), experiment_id)

    async def set_archived(self, experiment_id: int, archived: bool) -> ExperimentView:
        return await self.core.transact(_viewed(life.set_archived), experiment_id, archived)

    async def set_resources(self, experiment_id: int, changes: Mapping[str, Any]) -> ExperimentView:
        """Change the experiment's ``priority``, ``weight`` and ``max_slots`` (the keys given;
        ``max_slots`` None lifts the limit): all of them, or none when one is refused."""
        return await self.core.transact(
            _viewed(jobs.update_experiment_resources), experiment_id, changes, self.settings
        )

    async def kill_trial(self, trial_id: int) -> TrialView:
        def handler(tx: Tx) -> TrialView:
            return TrialView.of(life.kill_trial(tx, trial_id))

        return await self.core.transact(handler)

    async def queue(self, pool: str | None) -> JobQueue:
        """The active jobs of ``pool`` (the default compute pool when None), in scheduling
        order."""
        name = pool or self.settings.default_compute_pool
        waiting = set(self._waiting_jobs())
        return await self.core.read(lambda s: jobs.list_jobs(s, name, self.settings, waiting))

    async def update_jobs(self, updates: list[JobUpdate]) -> list[str]:
        """Apply every update or none (all problems reported together); the ids updated."""
        return await self.core.transact(jobs.update_jobs, updates, self.settings)

    async def wait(self, experiment_id: int, timeout: float) -> ExperimentState:
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
