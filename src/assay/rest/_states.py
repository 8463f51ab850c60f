"""The one place ``assay.rest`` takes the state enums from.

The enums are defined once, in the master's ``_states`` module, which imports nothing but the
standard library. Importing it by name would first run the master package (SQLAlchemy, the
searchers, numpy), which the client and the CLI must not pay for, so the module is loaded on its
own from its file. When the enums move to a standard-library-only package of their own, this
module becomes a single import from it.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from assay.master._states import AllocationState, ExperimentState, PreemptReason, TrialState
else:
    _NAME = "assay.rest._state_enums"

    def _load():  # type: ignore[no-untyped-def]
        loaded = sys.modules.get(_NAME)
        if loaded is not None:
            return loaded
        path = Path(__file__).resolve().parents[1] / "master" / "_states.py"
        spec = importlib.util.spec_from_file_location(_NAME, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[_NAME] = module
        spec.loader.exec_module(module)
        return module

    _module = _load()
    AllocationState = _module.AllocationState
    ExperimentState = _module.ExperimentState
    PreemptReason = _module.PreemptReason
    TrialState = _module.TrialState

__all__ = ["AllocationState", "ExperimentState", "PreemptReason", "TrialState"]
