"""A ``TFKerasTrial`` subclass trained on a cluster: what ``determined.exec.harness`` runs for
a legacy ``entrypoint: module:MyTrial`` whose class is one."""

from __future__ import annotations

import os
import warnings
from typing import Any

import keras

import assay.core
from assay.core import DistributedContext

from ._context import TFKerasTrialContext
from ._controller import TFKerasTrialController
from ._trial import TFKerasTrial


def several_slots(info: assay.core.ClusterInfo) -> bool:
    """Whether the trial was given more than one slot (or started behind a launcher)."""
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        return True
    return len(info.slot_ids) > 1 or len(info.container_addrs) > 1


def train(trial_class: type[TFKerasTrial], info: assay.core.ClusterInfo) -> None:
    """Train ``trial_class`` as the cluster's trial ``info`` describes, from its latest
    checkpoint if it has one."""
    assert info.trial is not None
    warnings.warn(
        "TFKerasTrial has been deprecated in Determined 0.38.0; det.keras.DeterminedCallback "
        "is its successor",
        FutureWarning,
        stacklevel=2,
    )
    trial_info = info.trial
    # Python's, numpy's, TensorFlow's and Keras's generators, from the trial's seed.
    keras.utils.set_random_seed(int(trial_info.trial_seed))
    config: dict[str, Any] = trial_info.config
    with assay.core.init(
        distributed=DistributedContext(), preempt_mode=assay.core.PreemptMode.WorkersAskChief
    ) as core_context:
        context = TFKerasTrialContext(
            core_context,
            hparams=dict(trial_info.hparams),
            exp_conf=config,
            trial_seed=int(trial_info.trial_seed),
            steps_completed=0,
            managed_training=True,
        )
        trial = trial_class(context)
        TFKerasTrialController.from_trial(trial, context, info.latest_checkpoint).run()
