"""The master: orchestration of experiments, trials, scheduling, agents and storage.

Pure policies (searchers, schedulers, the trial lifecycle's transitions) are composed here with
the database and the agents; the HTTP layer in ``assay.api`` calls into :class:`Master` and
nothing below it, and answers with the views it returns. The state enums are re-exported from
:mod:`assay.protocol`, where they are defined.
"""

from __future__ import annotations

from assay.master._commands import ExperimentCommands
from assay.master._gateway import AgentGateway
from assay.master._harness import Caller
from assay.master._harness_service import HarnessService
from assay.master._master import Master
from assay.master._reads import Reads
from assay.master._submit import Submission
from assay.master._views import (
    AgentSummary,
    AllocationView,
    BestTrial,
    CheckpointView,
    ExperimentPage,
    ExperimentSummary,
    ExperimentView,
    InstanceView,
    JobQueue,
    LogLine,
    MasterInfo,
    MetricView,
    PoolView,
    QueuedJob,
    SearcherSummary,
    SlotUse,
    TrialDetail,
    TrialLogs,
    TrialView,
)
from assay.protocol import AllocationState, ExperimentState, PreemptReason, TrialState

__all__ = [
    "AgentGateway",
    "AgentSummary",
    "AllocationState",
    "AllocationView",
    "BestTrial",
    "Caller",
    "CheckpointView",
    "ExperimentCommands",
    "ExperimentPage",
    "ExperimentState",
    "ExperimentSummary",
    "ExperimentView",
    "HarnessService",
    "InstanceView",
    "JobQueue",
    "LogLine",
    "Master",
    "MasterInfo",
    "MetricView",
    "PoolView",
    "PreemptReason",
    "QueuedJob",
    "Reads",
    "SearcherSummary",
    "SlotUse",
    "Submission",
    "TrialDetail",
    "TrialLogs",
    "TrialState",
    "TrialView",
]
