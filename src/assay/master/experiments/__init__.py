"""Experiments and trials: submission (Determined's, NNI's and assay's configs),
the lifecycle and its pure transitions, what trial processes report (the harness), forks,
continuations and deletion, warm starts and time limits.
"""

from __future__ import annotations

from assay.master.experiments import _lifecycle as lifecycle
from assay.master.experiments._allocations import TrialAllocations
from assay.master.experiments._commands import ExperimentCommands
from assay.master.experiments._harness_service import HarnessService
from assay.master.experiments._lifecycle import allocation_exited, request_preemption
from assay.master.experiments._submit import Submission
from assay.master.experiments._time_limits import enforce_time_limits
from assay.master.experiments._transitions import CLUSTER_STOPPED

__all__ = [
    "CLUSTER_STOPPED",
    "ExperimentCommands",
    "HarnessService",
    "Submission",
    "TrialAllocations",
    "allocation_exited",
    "enforce_time_limits",
    "lifecycle",
    "request_preemption",
]
