"""Determined's legacy Trial-class entrypoints: ``module.path:TrialClass``.

Determined read such an entrypoint as a ``PyTorchTrial`` subclass for its harness to train.
assay does the same: the master starts it as ``python3 -m determined.exec.harness
module:Class`` (behind ``determined.launch.torch_distributed`` when the trial has several
slots), and checks at submission that the module is in the context and that what it imports
can run (``assay.master.experiments._frameworks``).
"""

from __future__ import annotations

import re
from typing import Any

_TRIAL_CLASS = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")
"""``identifier(.identifier)*:Identifier``: no spaces, so never a command (``python3 x.py``)."""

HARNESS = ("python3", "-m", "determined.exec.harness")
"""What trains a Trial class in the trial's process (assay's ``determined`` package)."""
LAUNCHER = ("python3", "-m", "determined.launch.torch_distributed")
"""What starts one process per slot for a Trial class of several slots."""


def is_trial_class(entrypoint: Any) -> bool:
    """Whether ``entrypoint`` (a config's value, of any type) names a legacy Trial class."""
    return isinstance(entrypoint, str) and _TRIAL_CLASS.fullmatch(entrypoint.strip()) is not None


def trial_class_module(entrypoint: Any) -> str | None:
    """The module file a Trial-class entrypoint imports, as a path in the context
    (``pkg.model_def:Trial`` -> ``pkg/model_def.py``); None for any other value."""
    if not is_trial_class(entrypoint):
        return None
    module = str(entrypoint).strip().split(":", 1)[0]
    return module.replace(".", "/") + ".py"


def trial_command(entrypoint: str | list[str], slots_per_trial: int) -> str | list[str]:
    """The command a trial runs for ``entrypoint``: a Trial class trained by the harness (one
    process per slot through the torch launcher when it has several), else the entrypoint."""
    if not is_trial_class(entrypoint):
        return entrypoint
    spec = str(entrypoint).strip()
    if slots_per_trial > 1:
        return [*LAUNCHER, *HARNESS, spec]
    return [*HARNESS, spec]
