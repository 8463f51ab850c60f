"""The master: orchestration of experiments, trials, scheduling, agents and storage.

Pure policies (searchers, schedulers, the trial lifecycle's transitions) are composed here with
the database and the agents; the HTTP layer in ``assay.api`` asks the parts of :class:`Master`
and answers with the REST resources (:mod:`assay.rest`) they return. The state enums are
re-exported from :mod:`assay.protocol`, where they are defined.
"""

from __future__ import annotations

from assay.master._master import Backup, Master, database_url
from assay.master.allocations import AgentGateway, Inbox
from assay.master.artifacts import CheckpointFiles, CheckpointService, ModelRegistry
from assay.master.experiments import ExperimentCommands, HarnessService, Submission
from assay.master.identity import Actor, UserService
from assay.master.kernel import Caller, LogBatch
from assay.master.kernel import Message as LiveMessage
from assay.master.reads import KEEP as MASTER_LOG_KEEP
from assay.master.reads import LOG_PAGE, ExperimentsAsk, Reads, TrialsAsk, effective_config
from assay.master.tasks import LOG_PAGE as TASK_LOG_PAGE
from assay.master.tasks import NotebookService, ProxyTarget, TaskService, TensorBoardService
from assay.protocol import AllocationState, ExperimentState, PreemptReason, TrialState

__all__ = [
    "LOG_PAGE",
    "MASTER_LOG_KEEP",
    "TASK_LOG_PAGE",
    "Actor",
    "AgentGateway",
    "AllocationState",
    "Backup",
    "Caller",
    "CheckpointFiles",
    "CheckpointService",
    "ExperimentCommands",
    "ExperimentState",
    "ExperimentsAsk",
    "HarnessService",
    "Inbox",
    "LiveMessage",
    "LogBatch",
    "Master",
    "ModelRegistry",
    "NotebookService",
    "PreemptReason",
    "ProxyTarget",
    "Reads",
    "Submission",
    "TaskService",
    "TensorBoardService",
    "TrialState",
    "TrialsAsk",
    "UserService",
    "database_url",
    "effective_config",
]
