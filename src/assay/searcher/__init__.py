"""Hyperparameter search: pure methods (events in, operations out) and the master's wrapper.

Nothing here does IO or reads the clock; see :class:`SearchMethod` for the contract. Each
searcher config of ``assay.config`` builds its method through one registry entry
(:func:`make_searcher`); ``assay.searcher.testing`` checks any method against the contract.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from assay.searcher._adaptive import adaptive_asha
from assay.searcher._base import Searcher, SearchMethod
from assay.searcher._basic import BatchSearch, GridSearch, RandomSearch
from assay.searcher._custom import CustomSearcher, SearchContext
from assay.searcher._evolve import AnnealSource, EvolutionSource
from assay.searcher._factory import make_searcher, search_length
from assay.searcher._ops import (
    EVERY_TRIAL_FAILED,
    Close,
    Create,
    Operation,
    Shutdown,
    TrialRecord,
    ValidateAfter,
    checkpoint_parent,
    op_from_json,
    op_to_json,
    parent_checkpoint,
)
from assay.searcher._preview import (
    BracketPreview,
    SearchPreview,
    describe_brackets,
    preview_search,
)
from assay.searcher._rungs import BracketCount, RungCount, count_rungs, halving_brackets
from assay.searcher._source import Outcome, ParamSource
from assay.searcher._space import draw, grid, sample

if TYPE_CHECKING:
    from assay.searcher._optuna import OptunaSource, distributions

__all__ = [
    "EVERY_TRIAL_FAILED",
    "AnnealSource",
    "BatchSearch",
    "BracketCount",
    "BracketPreview",
    "Close",
    "Create",
    "CustomSearcher",
    "EvolutionSource",
    "GridSearch",
    "Operation",
    "OptunaSource",
    "Outcome",
    "ParamSource",
    "RandomSearch",
    "RungCount",
    "SearchContext",
    "SearchMethod",
    "SearchPreview",
    "Searcher",
    "Shutdown",
    "TrialRecord",
    "ValidateAfter",
    "adaptive_asha",
    "checkpoint_parent",
    "count_rungs",
    "describe_brackets",
    "distributions",
    "draw",
    "grid",
    "halving_brackets",
    "make_searcher",
    "op_from_json",
    "op_to_json",
    "parent_checkpoint",
    "preview_search",
    "sample",
    "search_length",
]


def __getattr__(name: str) -> Any:
    # Optuna takes half a second to import: it is loaded when a searcher first needs it, not
    # by every master, agent and command that imports this package.
    if name in _LAZY:
        from assay.searcher import _optuna

        return getattr(_optuna, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_LAZY = frozenset({"OptunaSource", "distributions"})
