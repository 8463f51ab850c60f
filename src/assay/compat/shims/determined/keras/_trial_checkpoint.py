"""``TFKerasTrial`` checkpoints in Determined 0.38's layout, as far as Keras 3 allows:

- ``determined-keras-model-weights.weights.h5``: the model's weights (Determined wrote
  TensorFlow's checkpoint format under ``determined-keras-model-weights``; Keras 3 saves
  weights only to ``.weights.h5``);
- ``determined-keras-optimizer-weights.h5``: each optimizer's variables, in group
  ``optimizer-N``, under ``optimizer_weights`` with their names in ``weight_names``;
- ``rng_state.pkl``, ``determined-callbacks.v1.pkl``, ``workload_sequencer.pkl``,
  ``load_data.json`` and ``code/``, as Determined wrote them.

Reading takes the older ``determined-keras-model.h5`` (Determined before 0.13.8) too;
TensorFlow-format weights of Determined's own checkpoints cannot be read by Keras 3.
"""

from __future__ import annotations

import json
import logging
import pickle
from pathlib import Path
from typing import TYPE_CHECKING, Any

import h5py  # type: ignore[import-untyped]
import numpy as np

from .._code import copy_code
from . import _rng
from ._trial_errors import InvalidExperimentException

if TYPE_CHECKING:
    from ._context import TFKerasTrialContext

log = logging.getLogger("determined.keras")

WEIGHTS = "determined-keras-model-weights.weights.h5"
OPTIMIZERS = "determined-keras-optimizer-weights.h5"
LEGACY_H5 = "determined-keras-model.h5"
TF_FORMAT = "determined-keras-model-weights"


def weights_file(path: Path) -> Path:
    """The model weights a checkpoint holds, in a form Keras 3 reads."""
    for name in (WEIGHTS, LEGACY_H5):
        if (path / name).exists():
            return path / name
    if (path / f"{TF_FORMAT}.index").exists():
        raise InvalidExperimentException(
            f"{path} holds weights in TensorFlow's checkpoint format (written by Determined's "
            "TFKerasTrial on Keras 2), which Keras 3 cannot load"
        )
    raise InvalidExperimentException(f"{path} holds no {WEIGHTS}")


def _save_optimizers(file: Path, optimizers: list[Any]) -> None:
    with h5py.File(file, "w") as h5:
        for idx, optimizer in enumerate(optimizers):
            group = h5.create_group(f"optimizer-{idx}").create_group("optimizer_weights")
            names = [f"{i}:{getattr(v, 'path', v.name)}" for i, v in enumerate(optimizer.variables)]
            group.attrs["weight_names"] = np.array([n.encode() for n in names])
            for i, variable in enumerate(optimizer.variables):
                group.create_dataset(str(i), data=np.asarray(variable))


def _load_optimizer(group: Any, optimizer: Any, model: Any) -> None:
    if not optimizer.built:
        optimizer.build(model.trainable_variables)
    weights = group.get("optimizer_weights", group)
    count = len(weights.attrs.get("weight_names", []))
    values = [np.asarray(weights[str(i)]) for i in range(count) if str(i) in weights]
    variables = list(optimizer.variables)
    shapes_match = len(values) == len(variables) and all(
        tuple(v.shape) == tuple(a.shape) for v, a in zip(variables, values, strict=True)
    )
    if not shapes_match:
        log.warning(
            "the checkpoint's optimizer state does not fit %s; it starts afresh",
            type(optimizer).__name__,
        )
        return
    for variable, value in zip(variables, values, strict=True):
        variable.assign(value)


def load_checkpoint(path: Path, model: Any, optimizers: list[Any]) -> None:
    """Load the model's and the optimizers' weights from checkpoint ``path``."""
    model.load_weights(str(weights_file(path)))
    file = path / OPTIMIZERS
    if not file.exists():
        log.warning("the checkpoint has no optimizer state; the optimizer starts afresh")
        return
    with h5py.File(file, "r") as h5:
        for idx, optimizer in enumerate(optimizers):
            if f"optimizer-{idx}" in h5:
                _load_optimizer(h5[f"optimizer-{idx}"], optimizer, model)


def save_checkpoint(
    path: Path,
    model: Any,
    context: TFKerasTrialContext,
    trial: Any,
    multiplexer: Any,
    sequencer_state: dict[str, Any],
) -> None:
    path.mkdir(parents=True, exist_ok=True)
    model.save_weights(str(path / WEIGHTS))
    _save_optimizers(path / OPTIMIZERS, context._optimizers)
    with (path / "rng_state.pkl").open("wb") as f:
        pickle.dump(_rng.get_rng_state(), f)
    copy_code(Path.cwd(), path / "code")
    with (path / "determined-callbacks.v1.pkl").open("wb") as f:
        pickle.dump(multiplexer._get_state(), f)
    multiplexer._checkpoint_end(path)
    with (path / "workload_sequencer.pkl").open("wb") as f:
        pickle.dump(dict(sequencer_state), f)
    cls = type(trial)
    load_data = {
        "trial_type": "TFKerasTrial",
        "experiment_config": context.get_experiment_config(),
        "hparams": context.get_hparams(),
        "trial_cls_spec": f"{cls.__module__}:{cls.__qualname__}",
    }
    (path / "load_data.json").write_text(json.dumps(load_data, default=str))
