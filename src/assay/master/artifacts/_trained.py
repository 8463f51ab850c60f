"""Checkpoints with what their trial trained them under: the experiment's config, the trial's
hyperparameters, the validation reported at the checkpoint's step. Determined's clients read a
checkpoint so (its ``training`` part): the SDK downloads from the storage the config names
and shows the validation metrics, and its lists sort by the searcher's metric."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assay import rest
from assay.config import STORAGE_SECRET_KEYS, masked_config
from assay.db import Checkpoint, Session, experiments, metrics, trials, users
from assay.master.kernel import views
from assay.protocol import VALIDATION


@dataclass(frozen=True)
class TrainedCheckpoint:
    """A checkpoint and what its trial trained it under."""

    checkpoint: rest.Checkpoint
    config: dict[str, Any]
    """Its experiment's config as the API shows it: secrets masked, and a storage's keys left
    out (a client reaching the storage directly uses its own)."""
    hparams: dict[str, Any]
    validation: dict[str, Any] | None
    """The values of the validation its trial reported at its step, if one was."""


@dataclass(frozen=True)
class CheckpointContext:
    """What a registry's answer needs beside the registry: its versions' checkpoints, trained
    (by uuid), and its users' ids (by name)."""

    checkpoints: dict[str, TrainedCheckpoint]
    user_ids: dict[str, int]


def trained(session: Session, rows: Sequence[Checkpoint]) -> list[TrainedCheckpoint]:
    """``rows`` (in their order), each with its training, read in ``session``: one read of
    each experiment and trial involved, one of the trials' validations."""
    shown = views.checkpoints_held(session, rows)
    configs: dict[int, dict[str, Any]] = {}
    for exp_id in {r.experiment_id for r in rows}:
        configs[exp_id] = _shown_config(experiments.require(session, exp_id).config)
    trial_ids = sorted({r.trial_id for r in rows})
    hparams = {t.id: dict(t.hparams or {}) for t in trials.as_stored(session, trial_ids)}
    validations: dict[tuple[int, int], dict[str, Any]] = {}
    for trial_id, steps, values, _reported in metrics.curves(session, trial_ids, VALIDATION):
        validations[(trial_id, steps)] = dict(values or {})
    return [
        TrainedCheckpoint(
            checkpoint=ckpt,
            config=configs[row.experiment_id],
            hparams=hparams.get(row.trial_id, {}),
            validation=validations.get((row.trial_id, row.steps_completed)),
        )
        for row, ckpt in zip(rows, shown, strict=True)
    ]


def user_ids(session: Session, names: Iterable[str]) -> dict[str, int]:
    """The ids of the users called ``names`` that exist."""
    found = (users.named(session, name) for name in set(names))
    return {u.username: u.id for u in found if u is not None}


def _shown_config(config: Mapping[str, Any]) -> dict[str, Any]:
    shown = dict(masked_config(dict(config)))
    storage = shown.get("checkpoint_storage")
    if isinstance(storage, dict):
        # Masked keys would be tried as keys; without them a client uses its own credentials.
        shown["checkpoint_storage"] = {
            k: v for k, v in storage.items() if k not in STORAGE_SECRET_KEYS
        }
    return shown
