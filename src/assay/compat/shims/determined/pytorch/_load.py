"""Loading a trained ``PyTorchTrial`` from a checkpoint's files, outside training."""

from __future__ import annotations

import pathlib
from typing import Any

from ..exec._load_trial import checkpoint_trial, importable_from, load_trial_class, offline_core
from . import _checkpoint
from ._context import PyTorchTrialContext
from ._trial import PyTorchTrial


class CheckpointLoadContext(PyTorchTrialContext):
    """A trial context for building a trial in order to load its weights, not to train it."""

    def __init__(
        self, hparams: dict[str, Any] | None = None, exp_conf: dict[str, Any] | None = None
    ) -> None:
        super().__init__(
            core_context=offline_core(),
            trial_seed=0,
            hparams=hparams,
            slots_per_trial=1,
            num_gpus=0,
            exp_conf=exp_conf,
            aggregation_frequency=1,
            steps_completed=0,
            managed_training=False,
            debug_enabled=False,
        )


def load_trial_from_checkpoint_path(
    path: str | pathlib.Path,
    trial_class: type[PyTorchTrial] | None = None,
    trial_kwargs: dict[str, Any] | None = None,
    torch_load_kwargs: dict[str, Any] | None = None,
    **kwargs: Any,
) -> PyTorchTrial:
    """The trial a checkpoint of a ``PyTorchTrial`` holds, its models' weights loaded: from
    ``load_data.json`` (Determined 0.17.7 onwards) or the ``metadata.json`` a download wrote."""
    ckpt = pathlib.Path(path)
    load_kwargs = dict(torch_load_kwargs or kwargs)
    config, hparams, spec, _ = checkpoint_trial(ckpt)
    if trial_class is None:
        with importable_from(ckpt / "code"):
            found_class, _ = load_trial_class(spec)
        if not issubclass(found_class, PyTorchTrial):
            raise TypeError(f"{spec} is not a det.pytorch.PyTorchTrial subclass")
        trial_class = found_class
    context = CheckpointLoadContext(hparams, config)
    trial = trial_class(context, **(trial_kwargs or {}))  # type: ignore[call-arg]
    found = _checkpoint.find_state_dict(ckpt)
    if found is None:
        raise ValueError(f"{ckpt} holds no state_dict.pth")
    state = _checkpoint.load_state_dict_file(found, **load_kwargs)
    key = "models_state_dict" if "models_state_dict" in state else "model_state_dict"
    states = state[key] if key == "models_state_dict" else [state[key]]
    for model, model_state in zip(context.models, states, strict=False):
        _checkpoint._load_model(model, model_state)
    return trial
