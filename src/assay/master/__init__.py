"""The master: orchestration of experiments, trials, scheduling, agents and storage.

Pure policies (searchers, schedulers, the trial lifecycle's transitions) are composed here with
the database and the agents; the HTTP layer in ``assay.api`` asks the parts of :class:`Master`
and answers with the REST resources (:mod:`assay.rest`) they return. The state enums are
re-exported from :mod:`assay.protocol`, where they are defined.
"""

from __future__ import annotations

from assay.master._callers import Caller
from assay.master._checkpoints import CheckpointFiles, CheckpointService
from assay.master._commands import ExperimentCommands
from assay.master._events import Message as LiveMessage
from assay.master._gateway import AgentGateway
from assay.master._harness_service import HarnessService
from assay.master._master import Master
from assay.master._master_log import KEEP as MASTER_LOG_KEEP
from assay.master._master_log import effective_config
from assay.master._reads import LOG_PAGE, Reads, TrialLogs
from assay.master._registry import ModelRegistry
from assay.master._submit import Submission
from assay.master._task_service import LOG_PAGE as TASK_LOG_PAGE
from assay.master._task_service import TaskLogs, TaskService
from assay.master._tensorboards import TensorBoardService
from assay.master._users import Actor, UserService
from assay.protocol import AllocationState, ExperimentState, PreemptReason, TrialState

__all__ = [
    "LOG_PAGE",
    "MASTER_LOG_KEEP",
    "TASK_LOG_PAGE",
    "Actor",
    "AgentGateway",
    "AllocationState",
    "Caller",
    "CheckpointFiles",
    "CheckpointService",
    "ExperimentCommands",
    "ExperimentState",
    "HarnessService",
    "LiveMessage",
    "Master",
    "ModelRegistry",
    "PreemptReason",
    "Reads",
    "Submission",
    "TaskLogs",
    "TaskService",
    "TensorBoardService",
    "TrialLogs",
    "TrialState",
    "UserService",
    "effective_config",
]
