"""Finding a legacy entrypoint's Trial class, and which Trial API it subclasses, without
importing a framework the trial's module did not import itself."""

from __future__ import annotations

import importlib
import sys
from typing import Any

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
        f"{spec} is neither a det.pytorch.PyTorchTrial nor a det.keras.TFKerasTrial subclass"
    )
