"""Hyperparameter search: pure methods (events in, operations out) and the master's wrapper.

Nothing here does IO or reads the clock; see :class:`SearchMethod` for the contract.
"""

from __future__ import annotations

from assay.searcher._adaptive import (
    AdaptiveMode,
    adaptive_asha,
    adaptive_brackets,
    bracket_max_concurrent,
    bracket_max_trials,
)
from assay.searcher._asha import AsyncHalving, AsyncHalvingStopping, rung_lengths
from assay.searcher._base import (
    WORST_METRIC,
    Searcher,
    SearchMethod,
    new_request_id,
    new_trial_seed,
    normalize_metric,
)
from assay.searcher._basic import GridSearch, RandomSearch, SingleSearch
from assay.searcher._custom import CustomSearcher, SearchContext
from assay.searcher._early_stop import (
    CurveFitRule,
    EarlyStopping,
    MedianStopRule,
    StopRule,
    extrapolate,
    fit_power_law,
)
from assay.searcher._factory import make_searcher, search_length
from assay.searcher._hyperband import Bracket, SuccessiveHalving, hyperband, hyperband_brackets
from assay.searcher._ops import (
    Close,
    Create,
    ExitedReason,
    Operation,
    Shutdown,
    TrialRecord,
    ValidateAfter,
    checkpoint_parent,
    op_from_json,
    op_to_json,
    parent_checkpoint,
)
from assay.searcher._optuna import SAMPLER_NAMES, OptunaSource, distributions, flat_params
from assay.searcher._pbt import PBT, explore
from assay.searcher._preview import BracketPreview, SearchPreview, preview_search
from assay.searcher._source import Outcome, ParamSource, RandomSource
from assay.searcher._space import grid, grid_axis, grid_size, sample, sample_one
from assay.searcher._tournament import Tournament

__all__ = [
    "PBT",
    "SAMPLER_NAMES",
    "WORST_METRIC",
    "AdaptiveMode",
    "AsyncHalving",
    "AsyncHalvingStopping",
    "Bracket",
    "BracketPreview",
    "Close",
    "Create",
    "CurveFitRule",
    "CustomSearcher",
    "EarlyStopping",
    "ExitedReason",
    "GridSearch",
    "MedianStopRule",
    "Operation",
    "OptunaSource",
    "Outcome",
    "ParamSource",
    "RandomSearch",
    "RandomSource",
    "SearchContext",
    "SearchMethod",
    "SearchPreview",
    "Searcher",
    "Shutdown",
    "SingleSearch",
    "StopRule",
    "SuccessiveHalving",
    "Tournament",
    "TrialRecord",
    "ValidateAfter",
    "adaptive_asha",
    "adaptive_brackets",
    "bracket_max_concurrent",
    "bracket_max_trials",
    "checkpoint_parent",
    "distributions",
    "explore",
    "extrapolate",
    "fit_power_law",
    "flat_params",
    "grid",
    "grid_axis",
    "grid_size",
    "hyperband",
    "hyperband_brackets",
    "make_searcher",
    "new_request_id",
    "new_trial_seed",
    "normalize_metric",
    "op_from_json",
    "op_to_json",
    "parent_checkpoint",
    "preview_search",
    "rung_lengths",
    "sample",
    "sample_one",
    "search_length",
]
