"""Checkpoints in Determined's layout: ``state_dict.pth`` (models, optimizers, LR schedulers,
scaler, callbacks, RNG state), ``trial_state.pkl``, ``load_data.json`` and ``code/``; and
reading those of Determined 0.17 onwards (older key names and file places included)."""

from __future__ import annotations

import json
import logging
import pathlib
import pickle
import random
from typing import TYPE_CHECKING, Any

import torch

from .._code import copy_code

if TYPE_CHECKING:
    from ._callback import PyTorchCallback
    from ._context import PyTorchTrialContext

log = logging.getLogger("determined.pytorch")

STATE_FILES = (
    ("state_dict.pth",),
    ("determined", "state_dict.pth"),
    ("pedl", "state_dict.pth"),
    ("checkpoint.pt",),
)
"""Where ``state_dict.pth`` has been kept, newest layout first."""


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:
        return None
    return numpy


def rng_state(local_rank: int) -> dict[str, Any]:
    state: dict[str, Any] = {
        "cpu_rng_state": torch.random.get_rng_state(),
        "random_rng_state": random.getstate(),
    }
    np = _numpy()
    if np is not None:
        state["np_rng_state"] = np.random.get_state()
    if torch.cuda.is_available() and torch.cuda.device_count():
        state["gpu_rng_state"] = torch.cuda.get_rng_state(local_rank)
    return state


def set_rng_state(state: dict[str, Any], local_rank: int) -> None:
    np = _numpy()
    if np is not None and "np_rng_state" in state:
        np.random.set_state(state["np_rng_state"])
    if "random_rng_state" in state:
        random.setstate(state["random_rng_state"])
    if "cpu_rng_state" in state:
        torch.random.set_rng_state(state["cpu_rng_state"])
    if "gpu_rng_state" in state and torch.cuda.is_available() and torch.cuda.device_count():
        torch.cuda.set_rng_state(state["gpu_rng_state"], device=local_rank)


def find_state_dict(path: pathlib.Path) -> pathlib.Path | None:
    for parts in STATE_FILES:
        candidate = path.joinpath(*parts)
        if candidate.exists():
            return candidate
    return None


def load_state_dict_file(path: pathlib.Path, **kwargs: Any) -> Any:
    # A trial's own checkpoint holds numpy RNG state and pickled callback state, which
    # torch's weights-only loader refuses: it is read as Determined wrote it.
    kwargs.setdefault("map_location", "cpu")
    kwargs.setdefault("weights_only", False)
    return torch.load(str(path), **kwargs)


def _load_model(model: torch.nn.Module, state: dict[str, Any]) -> None:
    try:
        model.load_state_dict(state)
        return
    except RuntimeError:
        # A checkpoint of a DDP model into a plain one, or the other way round.
        if isinstance(model, torch.nn.parallel.DistributedDataParallel):
            state = {k if k.startswith("module.") else f"module.{k}": v for k, v in state.items()}
        else:
            state = dict(state)
            torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(state, "module.")
    model.load_state_dict(state)


def _one_or_each(
    checkpoint: dict[str, Any], old: str, new: str, targets: list[Any], what: str
) -> None:
    """Load ``targets`` from the list under ``new``, or from the single state under ``old``
    (Determined before 0.13's one-model layout)."""
    if old in checkpoint:
        if new in checkpoint:
            raise RuntimeError(f"the checkpoint has both {old} and {new}")
        if len(targets) > 1:
            raise RuntimeError(
                f"the checkpoint holds one {what} ({old}); the trial wraps {len(targets)}"
            )
        states = [checkpoint[old]]
    else:
        states = list(checkpoint.get(new) or [])
    if targets and len(states) < len(targets):
        raise RuntimeError(
            f"the checkpoint holds {len(states)} {what}(s); the trial wraps {len(targets)}"
        )
    for target, state in zip(targets, states, strict=False):
        if what == "model":
            _load_model(target, state)
        else:
            target.load_state_dict(state)


def apply_checkpoint(
    checkpoint: dict[str, Any],
    context: PyTorchTrialContext,
    callbacks: dict[str, PyTorchCallback],
) -> None:
    """Put a loaded ``state_dict.pth`` into the trial's wrapped objects and callbacks."""
    for callback in callbacks.values():
        callback.on_checkpoint_load_start(checkpoint)
    _one_or_each(checkpoint, "model_state_dict", "models_state_dict", context.models, "model")
    _one_or_each(
        checkpoint, "optimizer_state_dict", "optimizers_state_dict", context.optimizers,
        "optimizer",
    )  # fmt: skip
    _one_or_each(
        checkpoint, "lr_scheduler", "lr_schedulers_state_dict", context.lr_schedulers,
        "LR scheduler",
    )  # fmt: skip
    if "scaler_state_dict" in checkpoint and context._scaler is not None:
        context._scaler.load_state_dict(checkpoint["scaler_state_dict"])
    elif context._scaler is not None:
        log.warning("the trial uses AMP but the checkpoint has no scaler state")
    if "rng_state" in checkpoint:
        set_rng_state(checkpoint["rng_state"], context.distributed.local_rank)
    else:
        log.warning("the checkpoint has no random state to restore")
    saved = checkpoint.get("callbacks") or {}
    for name, callback in callbacks.items():
        if name in saved:
            callback.load_state_dict(saved[name])


def read_trial_state(path: pathlib.Path) -> dict[str, Any] | None:
    """The loop's state saved with the checkpoint: ``trial_state.pkl``, or the
    ``workload_sequencer.pkl`` of Determined before the Trainer (its own field names)."""
    current = path / "trial_state.pkl"
    if current.exists():
        with current.open("rb") as f:
            return dict(pickle.load(f))
    legacy = path / "workload_sequencer.pkl"
    if legacy.exists():
        with legacy.open("rb") as f:
            old = dict(pickle.load(f))
        batches = old.get("steps_completed", old.get("latest_batch", 0)) or 0
        return {
            "trial_id": old.get("trial_id"),
            "last_ckpt": old.get("last_ckpt", 0) or 0,
            "last_val": old.get("last_val", 0) or 0,
            "step_id": old.get("step_id", 0) or 0,
            "batches_trained": int(batches),
            "epochs_trained": None,
        }
    return None


def save_checkpoint(
    path: pathlib.Path,
    context: PyTorchTrialContext,
    callbacks: dict[str, PyTorchCallback],
    trial_state: dict[str, Any],
    trial: Any,
    on_cluster: bool,
) -> None:
    path.mkdir(parents=True, exist_ok=True)
    if on_cluster:
        copy_code(pathlib.Path.cwd(), path / "code")
    checkpoint: dict[str, Any] = {
        "models_state_dict": [m.state_dict() for m in context.models],
        "optimizers_state_dict": [o.state_dict() for o in context.optimizers],
        "lr_schedulers_state_dict": [s.state_dict() for s in context.lr_schedulers],
        "callbacks": {name: cb.state_dict() for name, cb in callbacks.items()},
        "rng_state": rng_state(context.distributed.local_rank),
    }
    if context._scaler is not None:
        checkpoint["scaler_state_dict"] = context._scaler.state_dict()
    for callback in callbacks.values():
        callback.on_checkpoint_save_start(checkpoint)
    torch.save(checkpoint, str(path / "state_dict.pth"))
    with (path / "trial_state.pkl").open("wb") as f:
        pickle.dump(trial_state, f)
    try:
        exp_conf: dict[str, Any] | None = context.get_experiment_config()
        hparams: dict[str, Any] | None = context.get_hparams()
    except ValueError:
        exp_conf = hparams = None
    cls = type(trial)
    load_data: dict[str, Any] = {
        "trial_type": "PyTorchTrial",
        "experiment_config": exp_conf,
        "hparams": hparams,
        "trial_cls_spec": f"{cls.__module__}:{cls.__qualname__}",
    }
    if not context._is_pre_trainer:
        load_data["is_trainer"] = True
    (path / "load_data.json").write_text(json.dumps(load_data, default=str))
    for callback in callbacks.values():
        callback.on_checkpoint_end(str(path))
        callback.on_checkpoint_write_end(str(path))
