"""Determined's legacy Trial-class entrypoints, which assay refuses when they are submitted.

Determined read an entrypoint of the form ``model_def:MyTrial`` (a module, a colon, a class) as
a ``PyTorchTrial`` / ``TFKerasTrial`` subclass for its harness to drive. assay runs Core API
scripts only; without this check such a config is accepted and its trial fails once started.
"""

from __future__ import annotations

import re
from typing import Any

from assay.errors import ErrorDetail

_TRIAL_CLASS = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")
"""``identifier(.identifier)*:Identifier``: no spaces, so never a command (``python3 x.py``)."""


def is_trial_class(entrypoint: Any) -> bool:
    """Whether ``entrypoint`` (a config's value, of any type) names a legacy Trial class."""
    return isinstance(entrypoint, str) and _TRIAL_CLASS.fullmatch(entrypoint.strip()) is not None


def trial_class_problem(entrypoint: Any) -> ErrorDetail | None:
    """The refusal of a Trial-class entrypoint, or None for any other value."""
    if not is_trial_class(entrypoint):
        return None
    return ErrorDetail(
        "entrypoint",
        f"{entrypoint.strip()!r} names a Trial class (the legacy Trial API: PyTorchTrial, "
        "TFKerasTrial), which assay does not run; give a command that runs a Core API script, "
        "such as 'python3 train.py'",
    )
