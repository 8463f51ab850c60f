"""``nni.trial``: the functions NNI trial code calls (also re-exported as ``nni.*``)."""

from __future__ import annotations

import copy
import os
from typing import Any

from . import _runtime

_STANDALONE = "STANDALONE"


def get_next_parameter() -> dict[str, Any]:
    """This trial's hyperparameters (the same dict on every call); ``{}`` standalone."""
    return copy.deepcopy(_runtime.current().parameters())


def get_current_parameter(tag: str | None = None) -> Any:
    """The parameters :func:`get_next_parameter` gave, or the one named ``tag``."""
    params = _runtime.current().parameters()
    return copy.deepcopy(params if tag is None else params[tag])


def report_intermediate_result(metric: Any) -> None:
    """Report one intermediate result: a number, or a dict whose ``default`` is the number
    the assessor (early stopping) and tuner look at, with other metrics beside it."""
    _runtime.current().report(metric, final=False)


def report_final_result(metric: Any) -> None:
    """Report the trial's result (a number, or a dict with ``default``); it completes the
    searcher's operation for this trial."""
    _runtime.current().report(metric, final=True)


def get_experiment_id() -> str:
    return os.environ.get("NNI_EXP_ID", _STANDALONE)


def get_trial_id() -> str:
    return os.environ.get("NNI_TRIAL_JOB_ID", _STANDALONE)


def get_sequence_id() -> int:
    value = os.environ.get("NNI_TRIAL_SEQ_ID", "0")
    return int(value) if value.isdigit() else 0
