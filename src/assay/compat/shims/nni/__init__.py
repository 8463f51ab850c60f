"""NNI's trial API (``import nni``) on assay's harness.

A trial of an assay experiment gets its hyperparameters from the master, and its results
become validation metrics: each intermediate result one more step (what early stopping and
the UI see), the final result the last one, which also completes the searcher's operation.
Run outside assay, it behaves as NNI's own package does without an NNI manager: no
parameters (``{}``), ids ``STANDALONE`` and 0, and results printed.
"""

from __future__ import annotations

from . import trial, utils
from .trial import (
    get_current_parameter,
    get_experiment_id,
    get_next_parameter,
    get_sequence_id,
    get_trial_id,
    report_final_result,
    report_intermediate_result,
)
from .utils import merge_parameter

__version__ = "2.10"
"""The NNI release whose trial API this follows."""

__all__ = [
    "get_current_parameter",
    "get_experiment_id",
    "get_next_parameter",
    "get_sequence_id",
    "get_trial_id",
    "merge_parameter",
    "report_final_result",
    "report_intermediate_result",
    "trial",
    "utils",
]
