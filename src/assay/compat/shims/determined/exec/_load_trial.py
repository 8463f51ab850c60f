"""Finding a legacy entrypoint's Trial class, and which Trial API it subclasses, without
importing a framework the trial's module did not import itself; and what every Trial API's
loading from a checkpoint shares: which class wrote it, and a context that trains nothing."""

from __future__ import annotations

import contextlib
import importlib
import json
import pathlib
import sys
from collections.abc import Iterator
from typing import Any

import assay.core

TRIAL_APIS = (
    ("deepspeed", "determined.pytorch.deepspeed", "DeepSpeedTrial"),
    ("keras", "determined.keras", "TFKerasTrial"),
    ("pytorch", "determined.pytorch", "PyTorchTrial"),
)
"""(framework, module, base class): the Trial APIs the harness trains."""


def load_trial_class(spec: str) -> tuple[type[Any], str]:
    """The class ``module.path:Class`` names, and its framework (``keras`` or ``pytorch``)."""
    module_name, _, qualname = spec.partition(":")
    if not module_name or not qualname:
        raise ValueError(f"a trial class is named as module:Class, got {spec!r}")
    obj: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    if isinstance(obj, type):
        for framework, module, name in TRIAL_APIS:
            # A subclass's module imported the API's module; one that is not loaded is no base.
            base = getattr(sys.modules.get(module), name, None)
            if isinstance(base, type) and issubclass(obj, base):
                return obj, framework
    raise TypeError(
        f"{spec} is not a det.pytorch.PyTorchTrial, det.pytorch.deepspeed.DeepSpeedTrial or "
        "det.keras.TFKerasTrial subclass"
    )


def checkpoint_trial(ckpt: pathlib.Path) -> tuple[dict[str, Any], dict[str, Any], str, str | None]:
    """The experiment config, hyperparameters and ``module:Class`` of the trial that wrote a
    checkpoint, and its Trial API's name where it says: from ``load_data.json`` (Determined
    0.17.7 onwards) or the ``metadata.json`` a download wrote."""
    load_data, metadata = ckpt / "load_data.json", ckpt / "metadata.json"
    if load_data.exists():
        data = json.loads(load_data.read_text())
        config, hparams = data.get("experiment_config"), data.get("hparams")
        return (
            dict(config or {}),
            dict(hparams or {}),
            data["trial_cls_spec"],
            data.get("trial_type"),
        )
    if metadata.exists():
        data = json.loads(metadata.read_text())
        config, hparams = data.get("experiment_config"), data.get("hparams")
        if not config:
            raise ValueError(
                f"{metadata} does not say which trial wrote the checkpoint (no experiment_config)"
            )
        return dict(config), dict(hparams or {}), str(config["entrypoint"]), None
    raise ValueError(
        f"{ckpt} has neither load_data.json nor metadata.json, so the trial class is unknown: "
        "pass trial_class="
    )


@contextlib.contextmanager
def importable_from(path: pathlib.Path) -> Iterator[None]:
    """``path`` (a checkpoint's ``code/``) first on ``sys.path`` while the block runs."""
    sys.path.insert(0, str(path))
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(str(path))


def offline_core() -> assay.core.Context:
    """A core context that reports nothing anywhere: loading a trial trains nothing."""
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
