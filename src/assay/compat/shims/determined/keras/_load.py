"""``det.keras.load_model_from_checkpoint_path``: the model a ``TFKerasTrial`` checkpoint
holds, outside training."""

from __future__ import annotations

import contextlib
import json
import logging
import pathlib
import sys
from collections.abc import Iterator
from typing import Any

import assay.core

from ..exec._load_trial import load_trial_class
from ._context import TFKerasTrialContext
from ._trial import TFKerasTrial
from ._trial_checkpoint import weights_file

log = logging.getLogger("determined.keras")


def _offline_core() -> assay.core.Context:
    # A context that reports nothing anywhere: loading a model trains nothing.
    from assay.core import (
        CheckpointContext,
        DistributedContext,
        PreemptContext,
        SearcherContext,
        TrainContext,
    )

    dist = DistributedContext()
    return assay.core.Context(
        info=None,
        train=TrainContext(None, None, None, dist),
        checkpoint=CheckpointContext(None, None, {"type": "shared_fs", "host_path": "."}),
        preempt=PreemptContext(None, "", dist),
        searcher=SearcherContext(None, None, 1, dist),
        distributed=dist,
        session=None,
    )


@contextlib.contextmanager
def _importable_from(path: pathlib.Path) -> Iterator[None]:
    sys.path.insert(0, str(path))
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(str(path))


def load_model_from_checkpoint_path(path: str | pathlib.Path, tags: list[str] | None = None) -> Any:
    """The ``keras.Model`` of a ``TFKerasTrial`` checkpoint (downloaded, or read where it is
    stored), built by the trial's ``build_model()`` from the checkpoint's ``code/`` and with
    its weights loaded. ``tags`` (of TF1 SavedModels) is accepted and unused. Determined
    returned a TensorFlow ``AutoTrackable``; this is the compiled Keras model itself."""
    del tags
    ckpt = pathlib.Path(path)
    load_data, metadata = ckpt / "load_data.json", ckpt / "metadata.json"
    if load_data.exists():
        data = json.loads(load_data.read_text())
        if data.get("trial_type") != "TFKerasTrial":
            log.warning("%s does not look like a TFKerasTrial checkpoint; loading anyway", ckpt)
        config, hparams, spec = data["experiment_config"], data["hparams"], data["trial_cls_spec"]
    elif metadata.exists():
        # Determined 0.17.7 and older: the metadata a download wrote.
        data = json.loads(metadata.read_text())
        config, hparams = data.get("experiment_config"), data.get("hparams")
        if not config:
            raise ValueError(f"{metadata} does not say which trial wrote the checkpoint")
        spec = config["entrypoint"]
    else:
        raise ValueError(
            f"{ckpt} has neither load_data.json nor metadata.json, so its trial class is unknown"
        )
    with _importable_from(ckpt / "code"):
        trial_class, _ = load_trial_class(spec)
    if not issubclass(trial_class, TFKerasTrial):
        raise TypeError(f"{spec} is not a det.keras.TFKerasTrial subclass")
    context = TFKerasTrialContext(
        _offline_core(),
        hparams=dict(hparams or {}),
        exp_conf=dict(config or {}),
        trial_seed=0,
        steps_completed=0,
        managed_training=False,
    )
    trial = trial_class(context)
    model = trial.build_model()
    model.load_weights(str(weights_file(ckpt)))
    return model
