"""The variables every trial gets for NNI's and AdaptDL's trial code (see ``NniEnv`` and
``AdaptDLEnv`` in :mod:`assay.protocol`).

AdaptDL's checkpoint and share directories live under the experiment's checkpoint storage
(which every agent of the cluster reaches at the same path), in ``adaptdl/experiment-<id>/``:
``checkpoint/trial-<id>`` (the trial's, the same on every restart) and ``share`` (the
experiment's trials'). assay never deletes them: checkpoint garbage collection removes
checkpoints only. ``ADAPTDL_TENSORBOARD_LOGDIR`` is set by the agent: it is the run's TensorBoard
directory, which the harness copies to the storage's ``tensorboard/<experiment>/<trial>/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.config import ExperimentConfig
from assay.db import Experiment, Session, Trial, trials
from assay.protocol import AdaptDLEnv, NniEnv
from assay.storage import SharedFSStorage, storage_from_config


def adaptdl_root(config: dict[str, Any], experiment_id: int) -> Path:
    """The directory of an experiment's AdaptDL paths, from its stored config."""
    storage = storage_from_config(config.get("checkpoint_storage") or {})
    # Both storage types this build has keep their files in a local directory; submission
    # refuses an adaptdl experiment with any other.
    assert isinstance(storage, SharedFSStorage)
    return storage.base / "adaptdl" / f"experiment-{experiment_id}"


def trial_env(
    session: Session, exp: Experiment, cfg: ExperimentConfig, trial: Trial
) -> dict[str, str]:
    """NNI's ids (and AdaptDL's directories, for an experiment with an ``adaptdl`` section)."""
    adaptdl = cfg.adaptdl is not None
    env = {
        NniEnv.PLATFORM: NniEnv.ADAPTDL_PLATFORM if adaptdl else NniEnv.LOCAL_PLATFORM,
        NniEnv.EXPERIMENT_ID: str(exp.id),
        NniEnv.TRIAL_JOB_ID: str(trial.id),
        NniEnv.TRIAL_SEQ_ID: str(trials.sequence_number(session, trial)),
    }
    if adaptdl:
        root = adaptdl_root(exp.config, exp.id)
        env[AdaptDLEnv.CHECKPOINT_PATH] = str(root / "checkpoint" / f"trial-{trial.id}")
        env[AdaptDLEnv.SHARE_PATH] = str(root / "share")
    return env
