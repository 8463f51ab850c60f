"""Loading a trained ``PyTorchTrial`` from a checkpoint's files, outside training."""

from __future__ import annotations

import contextlib
import importlib
import json
import pathlib
import sys
from collections.abc import Iterator
from typing import Any

import assay.core

from . import _checkpoint
from ._context import PyTorchTrialContext
from ._trial import PyTorchTrial


def _offline_core() -> assay.core.Context:
    # A context that reports nothing anywhere: loading a trial trains nothing.
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


class CheckpointLoadContext(PyTorchTrialContext):
    """A trial context for building a trial in order to load its weights, not to train it."""

    def __init__(
        self, hparams: dict[str, Any] | None = None, exp_conf: dict[str, Any] | None = None
    ) -> None:
        super().__init__(
            core_context=_offline_core(),
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


@contextlib.contextmanager
def _importable_from(path: pathlib.Path) -> Iterator[None]:
    sys.path.insert(0, str(path))
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(str(path))


def trial_class_from_spec(spec: str) -> type[PyTorchTrial]:
    """The class ``module.path:Class`` names."""
    module_name, _, qualname = spec.partition(":")
    if not module_name or not qualname:
        raise ValueError(f"a trial class is named as module:Class, got {spec!r}")
    obj: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    if not (isinstance(obj, type) and issubclass(obj, PyTorchTrial)):
        raise TypeError(f"{spec} is not a det.pytorch.PyTorchTrial subclass")
    return obj


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
    load_data = ckpt / "load_data.json"
    metadata = ckpt / "metadata.json"
    if load_data.exists():
        data = json.loads(load_data.read_text())
        config, hparams, spec = (
            data.get("experiment_config"),
            data.get("hparams"),
            data["trial_cls_spec"],
        )
    elif metadata.exists():
        data = json.loads(metadata.read_text())
        config, hparams = data.get("experiment_config"), data.get("hparams")
        if not config:
            raise ValueError(
                f"{metadata} does not say which trial wrote the checkpoint (no experiment_config)"
            )
        spec = config["entrypoint"]
    else:
        raise ValueError(
            f"{ckpt} has neither load_data.json nor metadata.json, so the trial class is "
            "unknown: pass trial_class="
        )
    if trial_class is None:
        with _importable_from(ckpt / "code"):
            trial_class = trial_class_from_spec(spec)
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
