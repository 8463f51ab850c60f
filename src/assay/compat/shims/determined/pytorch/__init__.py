"""``determined.pytorch``: Determined's PyTorch Trial API on assay's harness.

``PyTorchTrial`` subclasses are trained by ``Trainer.fit()`` inside ``det.pytorch.init()``, or
by a legacy ``entrypoint: module:MyTrial``. It needs PyTorch in the trial's environment; a
trial without it is told so in one line.
"""

from __future__ import annotations

import sys as _sys

try:
    import torch  # noqa: F401 - imported first to find whether it is there
except ImportError:
    from assay.protocol import failure_line as _failure_line

    _message = (
        "determined.pytorch needs PyTorch, which this trial's Python does not have: install it "
        "where the agents run (pip install torch==2.13.0) or in the context's startup-hook.sh"
    )
    print(_failure_line(_message), file=_sys.stderr, flush=True)
    raise SystemExit(1) from None

from . import samplers
from ._callback import PyTorchCallback
from ._context import InvalidExperimentException, PyTorchTrialContext
from ._data import DataLoader, TorchData, adapt_batch_sampler, data_length, to_device
from ._experimental import PyTorchExperimentalContext
from ._load import CheckpointLoadContext, load_trial_from_checkpoint_path
from ._lr_scheduler import LRScheduler
from ._reducer import MetricReducer, Reducer
from ._trainer import Trainer, init
from ._trial import PyTorchTrial
from ._units import Batch, Epoch, TrainUnit

__all__ = [
    "Batch",
    "CheckpointLoadContext",
    "DataLoader",
    "Epoch",
    "InvalidExperimentException",
    "LRScheduler",
    "MetricReducer",
    "PyTorchCallback",
    "PyTorchExperimentalContext",
    "PyTorchTrial",
    "PyTorchTrialContext",
    "Reducer",
    "TorchData",
    "TrainUnit",
    "Trainer",
    "adapt_batch_sampler",
    "data_length",
    "init",
    "load_trial_from_checkpoint_path",
    "samplers",
    "to_device",
]
