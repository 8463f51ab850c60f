"""``det.keras.load_model_from_checkpoint_path``: the model a ``TFKerasTrial`` checkpoint
holds, outside training."""

from __future__ import annotations

import logging
import pathlib
from typing import Any

from ..exec._load_trial import checkpoint_trial, importable_from, load_trial_class, offline_core
from ._context import TFKerasTrialContext
from ._trial import TFKerasTrial
from ._trial_checkpoint import weights_file

log = logging.getLogger("determined.keras")


def load_model_from_checkpoint_path(path: str | pathlib.Path, tags: list[str] | None = None) -> Any:
    """The ``keras.Model`` of a ``TFKerasTrial`` checkpoint (downloaded, or read where it is
    stored), built by the trial's ``build_model()`` from the checkpoint's ``code/`` and with
    its weights loaded. ``tags`` (of TF1 SavedModels) is accepted and unused. Determined
    returned a TensorFlow ``AutoTrackable``; this is the compiled Keras model itself."""
    del tags
    ckpt = pathlib.Path(path)
    config, hparams, spec, trial_type = checkpoint_trial(ckpt)
    if trial_type not in (None, "TFKerasTrial"):
        log.warning("%s does not look like a TFKerasTrial checkpoint; loading anyway", ckpt)
    with importable_from(ckpt / "code"):
        trial_class, _ = load_trial_class(spec)
    if not issubclass(trial_class, TFKerasTrial):
        raise TypeError(f"{spec} is not a det.keras.TFKerasTrial subclass")
    context = TFKerasTrialContext(
        offline_core(),
        hparams=hparams,
        exp_conf=config,
        trial_seed=0,
        steps_completed=0,
        managed_training=False,
    )
    trial = trial_class(context)
    model = trial.build_model()
    model.load_weights(str(weights_file(ckpt)))
    return model
