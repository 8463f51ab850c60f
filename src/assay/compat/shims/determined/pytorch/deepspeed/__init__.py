"""``determined.pytorch.deepspeed``: Determined's DeepSpeed Trial API on assay's harness.

``DeepSpeedTrial`` subclasses are trained by ``Trainer.fit()`` inside
``det.pytorch.deepspeed.init()`` (behind ``determined.launch.deepspeed`` on several slots), or by
a legacy ``entrypoint: module:MyTrial``. It needs DeepSpeed in the trial's environment; a trial
without it is told so in one line.
"""

from __future__ import annotations

import importlib.util as _util
import sys as _sys

if _util.find_spec("deepspeed") is None:
    from assay.protocol import failure_line as _failure_line

    _message = (
        "determined.pytorch.deepspeed needs DeepSpeed, which this trial's Python does not have: "
        "install it where the agents run (pip install deepspeed==0.19.8) or in the context's "
        "startup-hook.sh"
    )
    print(_failure_line(_message), file=_sys.stderr, flush=True)
    raise SystemExit(1)

from ._context import DeepSpeedTrialContext, overwrite_deepspeed_config
from ._controller import DeepSpeedTrialController
from ._mpu import ModelParallelUnit, make_data_parallel_mpu, make_deepspeed_mpu
from ._trainer import Trainer, init
from ._trial import DeepSpeedTrial

__all__ = [
    "DeepSpeedTrial",
    "DeepSpeedTrialContext",
    "DeepSpeedTrialController",
    "ModelParallelUnit",
    "Trainer",
    "init",
    "make_data_parallel_mpu",
    "make_deepspeed_mpu",
    "overwrite_deepspeed_config",
]
