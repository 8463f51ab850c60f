"""Garbage collection on demand (``assay experiment set gc-policy``): a new policy, stored in
the experiment's config so its end uses it too, and run at once.

Allowed on any experiment, as Determined allows it; what a running one still needs is never
collected: the latest checkpoint of a trial that has not ended (a restart resumes from it) and
any checkpoint a trial that has not ended starts from; nor a checkpoint a model version holds
(the answer names those). Rows are marked DELETING in the
transaction that decides (a master killed after deleting files finishes the job when it comes
back, as it does for the automatic collection); a checkpoint whose files could not be deleted
goes back to the state it had, and the answer names it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from assay import rest
from assay.config import load_experiment_config
from assay.db import checkpoints, experiments, metrics, registry, trials
from assay.master.artifacts._gc import (
    CheckpointFacts,
    Removal,
    remove_files,
    settle_removal,
    to_delete,
    validation_scores,
)
from assay.master.identity import Actor
from assay.master.kernel import Orchestrator, Tx
from assay.master.kernel import checkpoint as checkpoint_view
from assay.protocol import CheckpointState, TrialState

_FIELDS = ("save_experiment_best", "save_trial_best", "save_trial_latest")
_DEFAULTS = {"save_experiment_best": 0, "save_trial_best": 1, "save_trial_latest": 1}
"""The policy of a config that sets none (as the config's storage section defaults it)."""


@dataclass
class _Plan:
    result: rest.GcResult
    storage: dict[str, object]
    before: dict[str, str]
    """Each doomed checkpoint's state before it was marked DELETING."""


def _plan(tx: Tx, actor: Actor, experiment_id: int, body: rest.GcPolicy) -> _Plan:
    exp = experiments.require(tx.session, experiment_id)
    actor.require_owner(exp.owner, f"experiment {experiment_id}")
    storage = dict(exp.config.get("checkpoint_storage") or {})
    policy = {
        name: int(
            given
            if (given := getattr(body, name)) is not None
            else storage.get(name, _DEFAULTS[name])
        )
        for name in _FIELDS
    }
    searcher = load_experiment_config(exp.config, stored=True).searcher
    sign = 1.0 if searcher.smaller_is_better else -1.0
    values = metrics.validation_values(tx.session, exp.id, searcher.metric)
    scores = validation_scores(values, sign)
    rows = [
        c
        for c in checkpoints.of(tx.session, experiment_id=exp.id)
        if c.state in (CheckpointState.ACTIVE, CheckpointState.DELETING)
    ]
    facts = [
        CheckpointFacts(
            c.uuid, c.trial_id, c.steps_completed, scores.get((c.trial_id, c.steps_completed))
        )
        for c in rows
    ]
    doomed = to_delete(facts, **policy) - still_needed(tx, exp.id, {c.uuid for c in rows})
    if body.uuids is not None:
        doomed &= set(body.uuids)
    held = registry.holding(tx.session, doomed)
    doomed -= set(held)
    chosen = [c for c in rows if c.uuid in doomed]
    listed = [
        rest.CollectedCheckpoint(
            **checkpoint_view(c).model_dump(),
            metric=_metric(scores.get((c.trial_id, c.steps_completed)), sign),
        )
        for c in chosen
    ]
    before = {c.uuid: c.state for c in chosen}
    if not body.dry_run:
        # The policy is the experiment's from now on: the collection at its end uses it.
        experiments.update(
            tx.session, exp, config={**exp.config, "checkpoint_storage": {**storage, **policy}}
        )
        checkpoints.mark_deleting(tx.session, chosen)
    registered = {
        uuid: [rest.ModelVersionRef(model=name, version=n) for name, n in pairs]
        for uuid, pairs in held.items()
    }
    result = rest.GcResult(
        **policy, dry_run=body.dry_run, checkpoints=listed, failed={}, registered=registered
    )
    return _Plan(result, storage, before)


def _metric(score: float | None, sign: float) -> float | None:
    return None if score is None else sign * score


def still_needed(tx: Tx, experiment_id: int, uuids: set[str]) -> set[str]:
    """Which of ``uuids`` (checkpoints of the experiment) a trial that has not ended may still
    load."""
    return set(needing(tx, experiment_id, uuids))


def needing(tx: Tx, experiment_id: int, uuids: set[str]) -> dict[str, str]:
    """Each of ``uuids`` that a trial that has not ended may still load, with why."""
    needed: dict[str, str] = {}
    for t in trials.starting_from(tx.session, uuids):
        if t.source_checkpoint and not TrialState(t.state).terminal:
            needed[t.source_checkpoint] = f"trial {t.id} ({t.state}) starts from it"
    for t in trials.of_experiment(tx.session, experiment_id):
        if t.latest_checkpoint in uuids and not TrialState(t.state).terminal:
            needed[t.latest_checkpoint] = (
                f"it is the latest checkpoint of trial {t.id} ({t.state}), which a restart "
                "resumes from"
            )
    return needed


async def delete_marked(
    core: Orchestrator, storage: dict[str, object], before: dict[str, str]
) -> Removal:
    """Delete the files of the checkpoints a transaction marked DELETING (``before``: each
    one's state before that), then mark the rows: files first, rows after, a row whose files
    could not be deleted back as it was. Shared by every way checkpoints are deleted on
    demand."""
    removal = await asyncio.to_thread(remove_files, core.storage, storage, list(before))
    await core.transact(settle_removal, removal, before)
    return removal


async def collect_now(
    core: Orchestrator, actor: Actor, experiment_id: int, body: rest.GcPolicy
) -> rest.GcResult:
    """Apply the policy: files first, then rows (see the module's doc)."""
    plan: _Plan = await core.transact(_plan, actor, experiment_id, body)
    result = plan.result
    if result.dry_run or not result.checkpoints:
        return result
    removal = await delete_marked(core, plan.storage, plan.before)
    gone = set(removal.gone)
    return result.model_copy(
        update={
            "checkpoints": [
                c.model_copy(update={"state": CheckpointState.DELETED})
                for c in result.checkpoints
                if c.uuid in gone
            ],
            "failed": removal.failed,
        }
    )
