"""What users do to experiments, trials and the queue: submit, pause, activate, cancel, kill,
archive, change resources and queue places, and wait for an experiment to end."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from assay import rest
from assay.config import ExperimentConfig, MasterConfig
from assay.context import inspect_archive
from assay.db import Experiment, Session, experiments, trials
from assay.db import agents as db_agents
from assay.db import jobs as db_jobs
from assay.errors import InvalidConfig
from assay.master.artifacts import gc_demand
from assay.master.experiments import _derive as derive
from assay.master.experiments import _lifecycle as life
from assay.master.experiments._frameworks import (
    OfferedFrameworks,
    ScriptImports,
    framework_problem,
    script_imports,
)
from assay.master.experiments._submit import (
    Submission,
    ValidSubmission,
    check_config,
    check_entrypoint_files,
    create_experiment,
    validate_submission,
)
from assay.master.experiments._submit_nni import read_submission
from assay.master.experiments._warm_start import resolve_warm_start
from assay.master.identity import Actor
from assay.master.kernel import (
    Orchestrator,
    Tx,
    add_note,
    container_problem,
    pod_image_problem,
    pull_problem,
    runs_containers,
    slurm_problem,
    views,
)
from assay.master.queue import jobs
from assay.protocol import ExperimentState
from assay.scheduler import JobUpdate


def _viewed(handler: Callable[..., Experiment]) -> Callable[..., rest.Experiment]:
    """``handler``, answering with the experiment as its transaction leaves it."""

    def run(tx: Tx, *args: Any) -> rest.Experiment:
        return views.experiment(tx.session, handler(tx, *args))

    return run


def _owned(actor: Actor, handler: Callable[..., rest.Experiment]) -> Callable[..., rest.Experiment]:
    """``handler(tx, experiment_id, ...)``, run only when ``actor`` may change the experiment:
    checked in the handler's own transaction, so ownership cannot change in between."""

    def run(tx: Tx, experiment_id: int, *args: Any) -> rest.Experiment:
        exp = experiments.require(tx.session, experiment_id)
        actor.require_owner(exp.owner, f"experiment {experiment_id}")
        return handler(tx, experiment_id, *args)

    return run


_METADATA = ("name", "description", "labels")
"""What ``PATCH /experiments/{id}`` changes besides resources (``assay experiment set``)."""


def _set_metadata(tx: Tx, exp: Experiment, changes: Mapping[str, Any]) -> Experiment:
    """Set the experiment's name, description and labels (given in ``changes``; None keeps
    one). The config shown keeps them too, as a submitted config would."""
    config = dict(exp.config)
    for field in _METADATA:
        value = changes.get(field)
        if value is None:
            continue
        if field == "labels":
            value = list(dict.fromkeys(value))  # a label given twice is one label
        config[field] = value
    changed = config != exp.config
    experiments.update(
        tx.session,
        exp,
        name=changes.get("name"),
        description=changes.get("description"),
        config=config if changed else None,
    )
    if changed:
        tx.searchers.drop(exp.id)
    return exp


class ExperimentCommands:
    """Each command runs in one transaction and answers with what it changed, read in that
    same transaction."""

    def __init__(
        self,
        core: Orchestrator,
        settings: MasterConfig,
        assay_home: Path,
    ) -> None:
        self.core = core
        self.settings = settings
        self.assay_home = assay_home

    async def create(self, actor: Actor, sub: Submission) -> rest.Experiment:
        """Validate the submission (raising with every problem at once, creating nothing),
        then create the experiment and its first trials, owned by ``actor``."""
        sub = replace(sub, owner=actor.username)

        def check() -> tuple[ValidSubmission, ScriptImports | None]:
            read = read_submission(sub)
            valid = validate_submission(read.submission, self.settings, self.assay_home)
            cfg, members = valid.config, valid.context.members
            return valid, script_imports(cfg.entrypoint, valid.context_data, members)

        valid, needs = await asyncio.to_thread(check)
        framework_problem(valid.config, self.settings, needs, self._offered_frameworks())

        def handler(tx: Tx) -> Experiment:
            self._check_containers(tx.session, valid.config)
            started = replace(valid, config=resolve_warm_start(tx.session, valid.config))
            return create_experiment(tx, started, self.settings)

        return await self.core.transact(_viewed(handler))

    async def validate(self, actor: Actor, sub: Submission) -> rest.ExperimentValidation:
        """Every check :meth:`create` makes, creating nothing: what the experiment would be,
        or :class:`~assay.errors.InvalidConfig` with every problem. An empty ``sub.context``
        skips the context's checks (a config checked before its directory is picked)."""
        sub = replace(sub, owner=actor.username)

        def check() -> tuple[rest.ExperimentValidation, ExperimentConfig, ScriptImports | None]:
            read = read_submission(sub)
            config, notes = check_config(read.submission, self.settings, self.assay_home)
            context = read.submission.context
            files = None
            needs = None
            if context:
                info = inspect_archive(context)
                check_entrypoint_files(config, info)
                files = info.files
                needs = script_imports(config.entrypoint, context, info.members)
            validation = rest.ExperimentValidation(
                source=read.source,
                name=config.name or "experiment",
                searcher=config.searcher.name,
                resource_pool=config.resources.resource_pool or self.settings.default_compute_pool,
                notes=list(notes),
                context_files=files,
            )
            return validation, config, needs

        validation, config, needs = await asyncio.to_thread(check)
        framework_problem(config, self.settings, needs, self._offered_frameworks())
        await self.core.read(lambda s: self._check_containers(s, config))
        await self.core.read(lambda s: resolve_warm_start(s, config))
        return validation

    def _offered_frameworks(self) -> list[OfferedFrameworks]:
        """What each connected agent said of its training frameworks."""
        return [
            OfferedFrameworks(c.view.pool, c.frameworks)
            for c in self.core.hub.agents.values()
            if c.connected
        ]

    def _check_containers(self, session: Session, config: ExperimentConfig) -> None:
        """Refuse trials in an image when no agent of their pool runs containers."""
        pool = config.resources.resource_pool or self.settings.default_compute_pool
        pool_config = self.settings.pool(pool)
        problem = container_problem(
            config,
            pool,
            runs_containers(pool_config, db_agents.pool_runs_containers(session, pool)),
            autoscaled=pool_config is not None and pool_config.provider is not None,
            pool_type=pool_config.type if pool_config is not None else "agents",
        )
        found = (
            problem,
            pull_problem(config, pool_config),
            slurm_problem(config, pool_config),
            pod_image_problem(config, pool_config),
        )
        problems = [p for p in found if p is not None]
        if problems:
            count = len(problems)
            raise InvalidConfig(
                f"invalid experiment config: {count} problem{'s' if count > 1 else ''}", problems
            )

    async def fork(
        self, actor: Actor, experiment_id: int, body: rest.ExperimentFork
    ) -> rest.Experiment:
        """A new experiment from the experiment's config and context, with overrides."""
        sub = await self.core.read(lambda s: derive.fork_submission(s, actor, experiment_id, body))
        return await self.create(actor, sub)

    async def continue_trial(
        self, actor: Actor, experiment_id: int, body: rest.ExperimentContinue
    ) -> rest.Experiment:
        """A new experiment training one of the experiment's trials further."""
        sub = await self.core.read(
            lambda s: derive.continue_submission(s, actor, experiment_id, body)
        )
        return await self.create(actor, sub)

    async def delete(
        self, actor: Actor, experiment_id: int, *, dry_run: bool = False
    ) -> rest.ExperimentDeleted:
        """Delete an ended experiment: its checkpoints from storage, then its rows (with
        ``dry_run``, only the refusals, and what would be deleted)."""
        return await derive.delete_experiment(self.core, actor, experiment_id, dry_run=dry_run)

    async def collect_checkpoints(
        self, actor: Actor, experiment_id: int, body: rest.GcPolicy
    ) -> rest.GcResult:
        """Run a new garbage-collection policy now and keep it for the experiment's end."""
        return await gc_demand.collect_now(self.core, actor, experiment_id, body)

    async def add_note(self, experiment_id: int, text: str) -> None:
        """Append a line to the experiment's log (``[experiment]`` in ``assay experiment
        logs``)."""

        def handler(tx: Tx) -> None:
            experiments.require(tx.session, experiment_id)
            add_note(tx, experiment_id, text)

        await self.core.transact(handler)

    async def pause(self, actor: Actor, experiment_id: int) -> rest.Experiment:
        return await self.core.transact(
            _owned(actor, _viewed(life.pause_experiment)), experiment_id
        )

    async def activate(self, actor: Actor, experiment_id: int) -> rest.Experiment:
        return await self.core.transact(
            _owned(actor, _viewed(life.activate_experiment)), experiment_id
        )

    async def cancel(self, actor: Actor, experiment_id: int) -> rest.Experiment:
        return await self.core.transact(
            _owned(actor, _viewed(life.cancel_experiment)), experiment_id
        )

    async def kill(self, actor: Actor, experiment_id: int) -> rest.Experiment:
        return await self.core.transact(_owned(actor, _viewed(life.kill_experiment)), experiment_id)

    async def set_archived(
        self, actor: Actor, experiment_id: int, archived: bool
    ) -> rest.Experiment:
        return await self.core.transact(
            _owned(actor, _viewed(life.set_archived)), experiment_id, archived
        )

    async def set_resources(
        self, actor: Actor, experiment_id: int, changes: Mapping[str, Any]
    ) -> rest.Experiment:
        """Change the experiment's ``priority``, ``weight`` and ``max_slots`` (the keys given;
        ``max_slots`` None lifts the limit) and its ``name``, ``description`` and ``labels``:
        all of them, or none when one is refused (one transaction)."""
        resources = {k: v for k, v in changes.items() if k not in _METADATA}
        metadata = {k: v for k, v in changes.items() if k in _METADATA}

        def handler(tx: Tx, experiment_id: int) -> Experiment:
            # Resources first: they may refuse (an ended experiment, a bad weight), and then
            # nothing is changed. Metadata may change on an ended experiment too.
            if resources or not metadata:
                exp = jobs.update_experiment_resources(tx, experiment_id, resources, self.settings)
            else:
                exp = experiments.require(tx.session, experiment_id)
            return _set_metadata(tx, exp, metadata)

        return await self.core.transact(_owned(actor, _viewed(handler)), experiment_id)

    async def kill_trial(self, actor: Actor, trial_id: int) -> rest.Trial:
        def handler(tx: Tx) -> rest.Trial:
            trial = trials.require(tx.session, trial_id)
            exp = experiments.require(tx.session, trial.experiment_id)
            actor.require_owner(exp.owner, f"trial {trial_id} (of experiment {exp.id})")
            (killed,) = views.trials_of(tx.session, [life.kill_trial(tx, trial_id)])
            return killed

        return await self.core.transact(handler)

    async def update_jobs(self, actor: Actor, updates: list[JobUpdate]) -> rest.JobsUpdated:
        """Apply every update or none (all problems reported together)."""

        def handler(tx: Tx) -> list[str]:
            for update in updates:
                job = db_jobs.get(tx.session, update.job_id)
                if job is not None:
                    actor.require_owner(job.owner, f"job {update.job_id}")
            return jobs.update_jobs(tx, updates, self.settings)

        updated = await self.core.transact(handler)
        return rest.JobsUpdated(updated=updated)

    async def wait(self, experiment_id: int, timeout: float) -> rest.ExperimentStateAnswer:
        """Wait up to ``timeout`` seconds for the experiment to end; its state then."""
        key = ("experiment", experiment_id)
        since = self.core.waiters.version(key)

        def state(session: Session) -> rest.ExperimentStateAnswer:
            exp = experiments.require(session, experiment_id)
            return rest.ExperimentStateAnswer(id=exp.id, state=ExperimentState(exp.state))

        current = await self.core.read(state)
        if current.state.terminal:
            return current
        await self.core.wait(key, since, timeout)
        return await self.core.read(state)
