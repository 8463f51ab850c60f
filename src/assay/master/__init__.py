"""The master: orchestration of experiments, trials, scheduling, agents and storage.

Pure policies (searchers, schedulers) are composed here with the database and the agents; the
HTTP layer in ``assay.api`` calls into :class:`Master` and nothing below it.
"""

from __future__ import annotations

from assay.master._harness import Caller
from assay.master._master import Master
from assay.master._submit import Submission
from assay.protocol import AllocationState, ExperimentState, PreemptReason, TrialState

__all__ = [
    "AllocationState",
    "Caller",
    "ExperimentState",
    "Master",
    "PreemptReason",
    "Submission",
    "TrialState",
]
