"""The REST API's wire shapes: one pydantic model per resource, request and answer.

The master answers with these models (so its OpenAPI names every field) and the client returns
them. This package imports pydantic and the standard library only, so the client and the
command line can use it without the server.
"""

from __future__ import annotations

from assay.protocol import AllocationState, ExperimentState, PreemptReason, TrialState
from assay.rest._cluster import (
    Agent,
    AgentList,
    AgentSlot,
    Instance,
    MasterInfo,
    ResourcePool,
    ResourcePoolList,
)
from assay.rest._common import (
    INT_MAX,
    NO_NUL,
    DbInt,
    DbText,
    ErrorBody,
    ErrorDetail,
    ErrorResponse,
    Pagination,
    Request,
    Resource,
)
from assay.rest._experiments import (
    BestTrial,
    Experiment,
    ExperimentList,
    ExperimentResources,
    ExperimentStateAnswer,
    ExperimentSummary,
    SearcherSummary,
)
from assay.rest._harness import (
    SIZE_MAX,
    BestValidation,
    CheckpointReport,
    CompletedOperation,
    EarlyExitReport,
    MetricReport,
    MetricsBatch,
    PreemptionSignal,
    ProgressReport,
    SearcherOperation,
)
from assay.rest._jobs import BatchChange, Job, JobBatch, JobChange, JobQueue, JobsUpdated
from assay.rest._trials import (
    Allocation,
    Checkpoint,
    CheckpointList,
    LogEntry,
    LogPage,
    Metric,
    MetricList,
    Trial,
    TrialDetail,
    TrialList,
)

__all__ = [
    "INT_MAX",
    "NO_NUL",
    "SIZE_MAX",
    "Agent",
    "AgentList",
    "AgentSlot",
    "Allocation",
    "AllocationState",
    "BatchChange",
    "BestTrial",
    "BestValidation",
    "Checkpoint",
    "CheckpointList",
    "CheckpointReport",
    "CompletedOperation",
    "DbInt",
    "DbText",
    "EarlyExitReport",
    "ErrorBody",
    "ErrorDetail",
    "ErrorResponse",
    "Experiment",
    "ExperimentList",
    "ExperimentResources",
    "ExperimentState",
    "ExperimentStateAnswer",
    "ExperimentSummary",
    "Instance",
    "Job",
    "JobBatch",
    "JobChange",
    "JobQueue",
    "JobsUpdated",
    "LogEntry",
    "LogPage",
    "MasterInfo",
    "Metric",
    "MetricList",
    "MetricReport",
    "MetricsBatch",
    "Pagination",
    "PreemptReason",
    "PreemptionSignal",
    "ProgressReport",
    "Request",
    "Resource",
    "ResourcePool",
    "ResourcePoolList",
    "SearcherOperation",
    "SearcherSummary",
    "Trial",
    "TrialDetail",
    "TrialList",
    "TrialState",
]
