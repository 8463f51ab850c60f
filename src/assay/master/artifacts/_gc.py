"""Checkpoint garbage collection: which checkpoints an ended experiment keeps.

A checkpoint is kept if it is among the experiment's ``save_experiment_best``, its trial's
``save_trial_best`` or its trial's ``save_trial_latest`` checkpoints, or a model version of the
registry holds it (whatever the policy). "Best" ranks checkpoints by
the searcher metric of the validation reported at the same ``steps_completed`` (checkpoints with
no such validation are never "best"); "latest" ranks them by ``steps_completed``. The rest are
deleted from storage, then marked DELETED. One whose files could not be deleted (storage
unreachable, say) goes back to ACTIVE, usable, with the reason logged: storage puts back what it
could not remove, so its row still points at its files.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from assay.config import load_experiment_config
from assay.db import Experiment, checkpoints, connection_lost, experiments, metrics, registry
from assay.errors import AssayError, PartlyDeleted, one_line
from assay.master.kernel import StorageAccess, Transactor, Tx
from assay.protocol import CheckpointState

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CheckpointFacts:
    uuid: str
    trial_id: int
    steps_completed: int
    score: float | None
    """The searcher metric at that step, normalised so smaller is better."""


def to_delete(
    checkpoints: Iterable[CheckpointFacts],
    *,
    save_experiment_best: int,
    save_trial_best: int,
    save_trial_latest: int,
) -> set[str]:
    """The uuids the policy does not keep."""
    items = list(checkpoints)
    keep: set[str] = set()
    scored = sorted((c for c in items if c.score is not None), key=lambda c: (c.score, c.uuid))
    keep.update(c.uuid for c in scored[:save_experiment_best])
    by_trial: dict[int, list[CheckpointFacts]] = {}
    for c in items:
        by_trial.setdefault(c.trial_id, []).append(c)
    for trial_items in by_trial.values():
        best = sorted(
            (c for c in trial_items if c.score is not None), key=lambda c: (c.score, c.uuid)
        )
        keep.update(c.uuid for c in best[:save_trial_best])
        latest = sorted(trial_items, key=lambda c: (-c.steps_completed, c.uuid))
        keep.update(c.uuid for c in latest[:save_trial_latest])
    return {c.uuid for c in items} - keep


def mark_for_collection(tx: Tx, exp: Experiment) -> None:
    """Mark the checkpoints an ended experiment does not keep as DELETING, in the transaction
    that ends it, so a master killed right after still deletes them when it comes back."""
    storage = dict(exp.config.get("checkpoint_storage") or {})
    # The typed config, read once here: the experiment has ended, and its searcher (which the
    # searchers' cache would build to give it) is not to be started again for this.
    searcher = load_experiment_config(exp.config, stored=True).searcher
    sign = 1.0 if searcher.smaller_is_better else -1.0
    values = metrics.validation_values(tx.session, exp.id, searcher.metric)
    scores = validation_scores(values, sign)
    rows = list(checkpoints.of(tx.session, experiment_id=exp.id))
    facts = [
        CheckpointFacts(
            c.uuid, c.trial_id, c.steps_completed, scores.get((c.trial_id, c.steps_completed))
        )
        for c in rows
        if c.state in (CheckpointState.ACTIVE, CheckpointState.DELETING)
    ]
    doomed = to_delete(
        facts,
        save_experiment_best=int(storage.get("save_experiment_best", 0)),
        save_trial_best=int(storage.get("save_trial_best", 1)),
        save_trial_latest=int(storage.get("save_trial_latest", 1)),
    )
    # A checkpoint a model version holds is never collected, whatever the policy says.
    held = registry.holding(tx.session, doomed)
    for uuid, pairs in held.items():
        log.info(
            "experiment %d: checkpoint %s kept: registered as model %s",
            exp.id,
            uuid,
            ", ".join(f"{name} v{n}" for name, n in pairs),
        )
    checkpoints.mark_deleting(
        tx.session, [c for c in rows if c.uuid in doomed and c.uuid not in held]
    )


def pending_deletions(tx: Tx, experiment_id: int) -> tuple[list[str], dict[str, Any]]:
    exp = experiments.get(tx.session, experiment_id)
    if exp is None:
        return [], {}
    rows = checkpoints.of(tx.session, experiment_id=experiment_id)
    doomed = sorted(c.uuid for c in rows if c.state == CheckpointState.DELETING)
    return doomed, dict(exp.config.get("checkpoint_storage") or {})


def validation_scores(
    values: Iterable[tuple[int, int, Any]], sign: float
) -> Mapping[tuple[int, int], float]:
    out: dict[tuple[int, int], float] = {}
    for trial_id, steps, value in values:
        if isinstance(value, int | float) and not isinstance(value, bool):
            score = sign * float(value)
            key = (trial_id, steps)
            out[key] = min(score, out.get(key, score))
    return out


def mark_deleted(tx: Tx, uuids: list[str]) -> None:
    for uuid in uuids:
        ckpt = checkpoints.get(tx.session, uuid)
        if ckpt is not None:
            checkpoints.mark_deleted(tx.session, ckpt)


@dataclass
class Removal:
    """What deleting checkpoints from storage did: the uuids gone (or never there), and the
    reason each of the others is still there."""

    gone: list[str]
    failed: dict[str, str]
    partly: set[str] = field(default_factory=set)
    """Those of ``failed`` that storage removed some files of (or cannot tell): no longer
    whole, they stay DELETING, which downloads refuse, for a later deletion to finish."""


def remove_files(
    access: StorageAccess, storage: Mapping[str, Any], uuids: Iterable[str], *, stop: bool = False
) -> Removal:
    """Delete each checkpoint from storage, going on past a failure (one bad directory must
    not keep the rest) unless ``stop``. The one place checkpoint files are deleted, within the
    bounds ``access`` sets."""
    out = Removal([], {})
    try:
        manager = access.manager(storage)
    except AssayError as exc:  # a storage the master may not touch: every one is kept
        for uuid in uuids:
            out.failed[uuid] = one_line(exc)
            if stop:
                break
        return out
    for uuid in uuids:
        try:
            access.checkpoint(uuid)
            if manager.exists(uuid):
                manager.delete(uuid)
            out.gone.append(uuid)
        except PartlyDeleted as exc:
            out.failed[uuid] = (
                f"{one_line(exc)}; it stays DELETING, which downloads refuse: delete it again "
                "once the storage is fixed"
            )
            out.partly.add(uuid)
            if stop:
                break
        except Exception as exc:  # any storage's failure: reported, the row kept
            out.failed[uuid] = one_line(exc)
            if stop:
                break
    return out


def settle_removal(tx: Tx, removal: Removal, before: Mapping[str, str]) -> None:
    """After :func:`remove_files` of the checkpoints ``before`` names (each one's state before
    it was marked DELETING): those whose files are gone become DELETED; one partly deleted
    stays DELETING (downloads refuse it; a later deletion finishes it); every other goes back
    as it was, its files all there (storage puts back what it could not remove), for a later
    collection or ``assay checkpoint delete`` to try again. Shared by every way checkpoints are
    deleted."""
    mark_deleted(tx, removal.gone)
    settled = set(removal.gone) | removal.partly
    for uuid, state in before.items():
        row = checkpoints.get(tx.session, uuid)
        if uuid not in settled and row is not None and row.state == CheckpointState.DELETING:
            checkpoints.put_back(tx.session, row, state=state)


RETRY_SECONDS = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
"""How long :func:`collect` waits before each new try when the database went away under it
(a PostgreSQL restarted or its backends terminated): each try is safe to repeat, and a
collection given up would leave its checkpoints DELETING until the master restarts."""


async def collect(master: Transactor, access: StorageAccess, experiment_id: int) -> int:
    """Run the experiment's GC policy; returns how many checkpoints were deleted. One whose
    files could not be deleted is kept, ACTIVE, and the reason logged."""
    for wait in RETRY_SECONDS:
        try:
            return await _collect_once(master, access, experiment_id)
        except Exception as exc:
            if not connection_lost(exc):
                raise
            log.warning(
                "experiment %d: checkpoint collection lost the database (%s); trying again "
                "in %.0f s",
                experiment_id,
                one_line(exc),
                wait,
            )
            await asyncio.sleep(wait)
    return await _collect_once(master, access, experiment_id)  # the last try's error is raised


async def _collect_once(master: Transactor, access: StorageAccess, experiment_id: int) -> int:
    uuids, storage = await master.transact(pending_deletions, experiment_id)
    if not uuids:
        return 0
    removal = await asyncio.to_thread(remove_files, access, storage, uuids)
    for uuid, reason in removal.failed.items():
        log.warning(
            "experiment %d: could not delete checkpoint %s (%s); it is kept",
            experiment_id,
            uuid,
            reason,
        )

    # The collection marked them DELETING from ACTIVE (or an earlier one did, and stopped).
    await master.transact(settle_removal, removal, dict.fromkeys(uuids, CheckpointState.ACTIVE))
    return len(removal.gone)
