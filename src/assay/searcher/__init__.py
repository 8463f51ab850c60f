"""Hyperparameter search: pure methods (events in, operations out) and the master's wrapper.

Nothing here does IO or reads the clock; see :class:`SearchMethod` for the contract.
"""

from __future__ import annotations

from assay.searcher._base import Searcher, SearchMethod, new_request_id, new_trial_seed
from assay.searcher._basic import GridSearch, RandomSearch, SingleSearch
from assay.searcher._ops import (
    Close,
    Create,
    ExitedReason,
    Operation,
    Shutdown,
    TrialRecord,
    ValidateAfter,
    op_to_json,
)
from assay.searcher._space import grid, grid_axis, grid_size, sample, sample_one

__all__ = [
    "Close",
    "Create",
    "ExitedReason",
    "GridSearch",
    "Operation",
    "RandomSearch",
    "SearchMethod",
    "Searcher",
    "Shutdown",
    "SingleSearch",
    "TrialRecord",
    "ValidateAfter",
    "grid",
    "grid_axis",
    "grid_size",
    "new_request_id",
    "new_trial_seed",
    "op_to_json",
    "sample",
    "sample_one",
]
