"""``determined.keras``: Determined's Keras APIs on assay's harness.

- ``DeterminedCallback`` and ``TensorBoard``: Keras callbacks that connect a plain
  ``model.fit()`` (inside ``det.core.init()``) to the cluster, Determined 0.38's way.
- ``TFKerasTrial``: the older Trial API, trained by a legacy ``entrypoint: module:MyTrial``.

It needs TensorFlow in the trial's environment; a trial without it is told so in one line.
"""

from __future__ import annotations

import sys as _sys

try:
    import tensorflow  # noqa: F401 - imported first to find whether it is there
except ImportError:
    from assay.protocol import failure_line as _failure_line

    _message = (
        "determined.keras needs TensorFlow, which this trial's Python does not have: install it "
        "where the agents run (pip install tensorflow) or in the context's startup-hook.sh"
    )
    print(_failure_line(_message), file=_sys.stderr, flush=True)
    raise SystemExit(1) from None

from . import callbacks
from ._callback import DeterminedCallback
from ._context import TFKerasExperimentalContext, TFKerasTrainConfig, TFKerasTrialContext
from ._controller import TFKerasTrialController
from ._data import ArrayLike, InputData, SequenceAdapter
from ._load import load_model_from_checkpoint_path
from ._rng import get_rng_state, set_rng_state
from ._tensorboard import TensorBoard
from ._trial import TFKerasTrial
from ._trial_errors import InvalidDataTypeException, InvalidExperimentException

__all__: list[str] = [
    "ArrayLike",
    "DeterminedCallback",
    "InputData",
    "InvalidDataTypeException",
    "InvalidExperimentException",
    "SequenceAdapter",
    "TFKerasExperimentalContext",
    "TFKerasTrainConfig",
    "TFKerasTrial",
    "TFKerasTrialContext",
    "TFKerasTrialController",
    "TensorBoard",
    "callbacks",
    "get_rng_state",
    "load_model_from_checkpoint_path",
    "set_rng_state",
]
