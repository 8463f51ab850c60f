"""Experiments made from others, and deleting one: ``fork`` (the same config and context, with
overrides), ``continue`` (a trial trained further from its latest checkpoint) and ``delete``.

A fork or a continuation is a new experiment, submitted as ``create`` submits one: validated the
same way, owned by who asks, its context the original's stored archive (no upload). The
original is left as it was: its record and its trials stay what they were.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

import yaml

from assay import rest
from assay.config import (
    ExperimentConfig,
    InvalidConfig,
    Unit,
    load_experiment_config,
    secret_values,
)
from assay.db import Session, checkpoints, contexts, experiments, trials
from assay.errors import Conflict, Forbidden, NotFound, one_line
from assay.master.artifacts import Removal, refuse_registered, remove_files, settle_removal
from assay.master.experiments._submit import Submission
from assay.master.identity import Actor
from assay.master.kernel import Orchestrator, StorageAccess, Tx
from assay.protocol import CheckpointState, ExperimentState, TrialState
from assay.storage import TENSORBOARD_PREFIX, FileStore

log = logging.getLogger(__name__)


def _config_text(config: dict[str, Any]) -> str:
    return yaml.safe_dump(config, sort_keys=False)


def _readable(session: Session, actor: Actor, experiment_id: int, verb: str) -> Any:
    """The experiment, when ``actor`` may make a new one from it: anyone may, unless its config
    holds secret values, which go only to its owner's or an admin's new experiments."""
    exp = experiments.require(session, experiment_id)
    if secret_values(exp.config) and not actor.may_change(exp.owner):
        raise Forbidden(
            f"experiment {experiment_id} has secret environment variables; only its owner "
            f"({exp.owner}) or an admin may {verb} it"
        )
    return exp


def fork_submission(
    session: Session, actor: Actor, experiment_id: int, body: rest.ExperimentFork
) -> Submission:
    """The submission of a fork: the original's config as it runs (defaults filled in, its
    seed kept, so the same search is drawn again), its context, and ``body``'s overrides."""
    exp = _readable(session, actor, experiment_id, "fork")
    return Submission(
        config_text=_config_text(exp.config),
        context=contexts.archive_of(exp),
        overrides=tuple(body.overrides),
        activate=body.activate,
        notes=(f"forked from experiment {experiment_id}",),
        # Its trials run the same code: a fork of an NNI experiment ranks them as NNI does.
        source=rest.ConfigSource(exp.source),
    )


def _constants(hparams: dict[str, Any]) -> dict[str, Any]:
    """A trial's hyperparameters as a config's constant ones (nested maps stay nested)."""
    return {
        name: _constants(value) if isinstance(value, dict) else {"type": "const", "val": value}
        for name, value in hparams.items()
    }


def continue_submission(
    session: Session, actor: Actor, experiment_id: int, body: rest.ExperimentContinue
) -> Submission:
    """The submission of a continuation: one trial (searcher ``single``) with the chosen
    trial's hyperparameters, starting from its latest checkpoint (``source_checkpoint_uuid``:
    the trial sees it as ``latest_checkpoint``), and ``body``'s overrides (a larger
    ``searcher.max_length``)."""
    exp = _readable(session, actor, experiment_id, "continue")
    state = ExperimentState(exp.state)
    if not state.terminal:
        raise Conflict(
            f"experiment {experiment_id} is {state}; continue trains an ended experiment's trial "
            "further: wait for it to end, or pause or kill it first"
        )
    its_trials = list(trials.of_experiment(session, experiment_id))
    if body.trial_id is None:
        if len(its_trials) != 1:
            # The body is right for an experiment of one trial: this one's state refuses it.
            ids = ", ".join(str(t.id) for t in its_trials[:10]) or "none"
            raise Conflict(
                f"experiment {experiment_id} has {len(its_trials)} trials ({ids}); name the one "
                "to continue with --trial ID"
            )
        trial = its_trials[0]
    else:
        found = [t for t in its_trials if t.id == body.trial_id]
        if not found:
            raise NotFound(f"trial {body.trial_id} is not a trial of experiment {experiment_id}")
        trial = found[0]
    ckpt = checkpoints.get(session, trial.latest_checkpoint) if trial.latest_checkpoint else None
    if ckpt is None or ckpt.state != CheckpointState.ACTIVE:
        raise Conflict(
            f"trial {trial.id} has no checkpoint to continue from"
            + ("" if ckpt is None else f" (its latest, {ckpt.uuid}, is {ckpt.state})")
        )
    config = dict(exp.config)
    old = dict(config.get("searcher") or {})
    searcher: dict[str, Any] = {"name": "single"}
    for key in ("metric", "smaller_is_better", "max_length"):
        if old.get(key) is not None:
            searcher[key] = old[key]
    searcher["source_trial_id"] = trial.id
    searcher["source_checkpoint_uuid"] = ckpt.uuid
    config["searcher"] = searcher
    config["hyperparameters"] = _constants(trial.hparams)
    try:
        effective = load_experiment_config(config, overrides=body.overrides)
    except InvalidConfig:
        effective = None  # create reports it with every other problem of the config
    if effective is not None:
        problem = length_problem(effective, trial.id, ckpt.steps_completed)
        if problem is not None:
            # What the trial trained is its state: the same body continues a trial that
            # trained less.
            raise Conflict(problem)
    return Submission(
        config_text=_config_text(config),
        context=contexts.archive_of(exp),
        overrides=tuple(body.overrides),
        activate=body.activate,
        notes=(
            f"continues trial {trial.id} of experiment {experiment_id} from its checkpoint "
            f"{ckpt.uuid} (step {ckpt.steps_completed})",
        ),
        source=rest.ConfigSource(exp.source),
    )


def length_problem(config: ExperimentConfig, trial_id: int, steps: int) -> str | None:
    """Why continuing a trial from its checkpoint at ``steps`` under ``config`` would train
    nothing: its ``searcher.max_length`` is already reached (steps count in the searcher's unit,
    as the trial's code reports them). None when there is training left to do."""
    length = getattr(config.searcher, "max_length", None)
    if length is None or steps < length.value:
        return None
    unitless = length.unit is Unit.UNITLESS
    trained = str(steps) if unitless else f"{steps} {length.unit.value}"
    key = "searcher.max_length" if unitless else f"searcher.max_length.{length.unit.value}"
    reached = (
        "its searcher.max_length"
        if steps == length.value
        else f"past its searcher.max_length of {length}"
    )
    return (
        f"trial {trial_id} already trained {trained}, {reached}; "
        f"give a longer one: --config {key}=N"
    )


@dataclass(frozen=True)
class DeletionPlan:
    name: str
    trials: int
    uuids: list[str]
    """The checkpoints still in storage."""
    storage: dict[str, Any]
    before: dict[str, str]
    """Each checkpoint's state before the plan marked it DELETING (put back if it stays)."""


def deletion_plan(tx: Tx, actor: Actor, experiment_id: int, dry_run: bool) -> DeletionPlan:
    """What deleting the experiment removes; refused unless ``actor`` owns it (or is an
    admin), it has ended, no live trial starts from one of its checkpoints and no model
    version holds one."""
    exp = experiments.require(tx.session, experiment_id)
    actor.require_owner(exp.owner, f"experiment {experiment_id}")
    state = ExperimentState(exp.state)
    if not state.terminal:
        raise Conflict(
            f"experiment {experiment_id} is {state}; only an ended experiment can be deleted: "
            f"kill it first (`assay experiment kill {experiment_id}`)"
        )
    rows = list(checkpoints.of(tx.session, experiment_id=experiment_id))
    _refuse_if_used(tx.session, experiment_id, {c.uuid for c in rows})
    refuse_registered(tx.session, [c.uuid for c in rows], f"experiment {experiment_id}")
    kept = sorted(c.uuid for c in rows if c.state != CheckpointState.DELETED)
    before = {c.uuid: c.state for c in rows if c.state != CheckpointState.DELETED}
    # Marked before their files go: none can be registered as a model version meanwhile, and
    # a master stopped in between finishes deleting them when it comes back.
    if not dry_run:
        checkpoints.mark_deleting(
            tx.session, [c for c in rows if c.state == CheckpointState.ACTIVE]
        )
    return DeletionPlan(
        exp.name,
        len(trials.of_experiment(tx.session, experiment_id)),
        kept,
        dict(exp.config.get("checkpoint_storage") or {}),
        before,
    )


def _refuse_if_used(session: Session, experiment_id: int, uuids: set[str]) -> None:
    for user in trials.starting_from(session, uuids):
        if user.experiment_id != experiment_id and not TrialState(user.state).terminal:
            raise Conflict(
                f"trial {user.id} of experiment {user.experiment_id} starts from checkpoint "
                f"{user.source_checkpoint} of experiment {experiment_id}; delete it once that "
                "trial has ended"
            )


def delete_files(access: StorageAccess, plan: DeletionPlan, experiment_id: int) -> Removal:
    """Delete the plan's checkpoints from storage, stopping at the first failure; then, if
    all are gone, the experiment's TensorBoard files. Returns what was removed: ``failed``
    names the first checkpoint (or the TensorBoard files, under ``""``) that could not be."""
    removal = remove_files(access, plan.storage, plan.uuids, stop=True)
    if removal.failed:
        return removal
    try:
        store = access.manager(plan.storage) if plan.storage else None
        if isinstance(store, FileStore):
            store.delete_prefix(f"{TENSORBOARD_PREFIX}/{experiment_id}")
    except Exception as exc:  # any storage's failure: reported, the rows kept
        removal.failed[""] = one_line(exc)
    return removal


def _refuse_failed(removal: Removal, experiment_id: int) -> None:
    for uuid, reason in removal.failed.items():
        if not uuid:
            raise Conflict(
                f"could not delete the TensorBoard files of experiment {experiment_id} "
                f"({TENSORBOARD_PREFIX}/{experiment_id} in its storage: {reason}); the "
                "experiment is kept: fix the storage and delete it again"
            )
        deleted = f"; {count_of(len(removal.gone))} deleted before it" if removal.gone else ""
        left = "the others" if uuid in removal.partly else "its checkpoints"
        raise Conflict(
            f"could not delete checkpoint {uuid} of experiment {experiment_id} from storage "
            f"({reason}); the experiment is kept, {left} left as they were{deleted}: "
            "fix the storage and delete it again"
        )


def count_of(n: int) -> str:
    return f"{n} checkpoint" if n == 1 else f"{n} checkpoints"


def delete_rows(
    tx: Tx, actor: Actor, experiment_id: int, plan: DeletionPlan
) -> rest.ExperimentDeleted:
    exp = experiments.require(tx.session, experiment_id)
    actor.require_owner(exp.owner, f"experiment {experiment_id}")
    rows = list(checkpoints.of(tx.session, experiment_id=experiment_id))
    _refuse_if_used(tx.session, experiment_id, {c.uuid for c in rows})
    experiments.delete(tx.session, experiment_id)
    tx.searchers.release(experiment_id)
    return rest.ExperimentDeleted(
        id=experiment_id, name=plan.name, trials=plan.trials, checkpoints=len(plan.uuids)
    )


async def delete_experiment(
    core: Orchestrator, actor: Actor, experiment_id: int, *, dry_run: bool = False
) -> rest.ExperimentDeleted:
    """Storage first, then rows: a master killed in between finds the rows and deletes again.
    With ``dry_run``, the same refusals and what would be deleted, nothing changed."""
    plan: DeletionPlan = await core.transact(deletion_plan, actor, experiment_id, dry_run)
    if dry_run:
        return rest.ExperimentDeleted(
            id=experiment_id, name=plan.name, trials=plan.trials, checkpoints=len(plan.uuids)
        )
    removal = await asyncio.to_thread(delete_files, core.storage, plan, experiment_id)
    if removal.failed:
        await core.transact(settle_removal, removal, plan.before)
        _refuse_failed(removal, experiment_id)
    return await core.transact(delete_rows, actor, experiment_id, plan)
