"""What every room of the master shares: the database behind one lock, transactions whose
actions run after their commit (:class:`Orchestrator`, :class:`Tx`), the in-memory searchers a
transaction may change, the agent hub, long-polls and live events, the clock, the views of rows
as REST resources, and the rules of reach (how far into storage the master may go, which
containers a pool offers). It imports no other room.
"""

from __future__ import annotations

from assay.master.kernel import _views as views
from assay.master.kernel._agents import AgentConnection, AgentHub, AgentView, Sender
from assay.master.kernel._callers import Caller
from assay.master.kernel._clock import account_state_change, active_time
from assay.master.kernel._containers import (
    container_problem,
    job_container,
    job_in_containers,
    job_label,
    offered_labels,
    pod_image_problem,
    pull_problem,
    request_label,
    runs_containers,
    slurm_problem,
    trial_container,
    trial_image,
)
from assay.master.kernel._events import Message, Scope
from assay.master.kernel._kinds import (
    AgentStarted,
    AllocationKind,
    Held,
    KindPass,
    Placement,
    PoolWork,
    aux_placement,
    exit_reason,
    kind_of,
    kinds_of,
)
from assay.master.kernel._logs import KEEP_ALIVE_SECONDS, LogBatch, follow_logs
from assay.master.kernel._measures import TEXT_FORMAT, ClusterState, Measures, zeros
from assay.master.kernel._notes import add_note
from assay.master.kernel._orchestrator import Orchestrator
from assay.master.kernel._searchers import SearcherCache
from assay.master.kernel._storage_access import StorageAccess
from assay.master.kernel._storage_endpoints import endpoint_limit
from assay.master.kernel._tx import (
    AllocationEnded,
    ExperimentEnded,
    KillAllocation,
    PreemptAllocation,
    Reschedule,
    StartAllocation,
    Transactor,
    Tx,
    Wake,
)
from assay.master.kernel._views import checkpoint

__all__ = [
    "KEEP_ALIVE_SECONDS",
    "TEXT_FORMAT",
    "AgentConnection",
    "AgentHub",
    "AgentStarted",
    "AgentView",
    "AllocationEnded",
    "AllocationKind",
    "Caller",
    "ClusterState",
    "ExperimentEnded",
    "Held",
    "KillAllocation",
    "KindPass",
    "LogBatch",
    "Measures",
    "Message",
    "Orchestrator",
    "Placement",
    "PoolWork",
    "PreemptAllocation",
    "Reschedule",
    "Scope",
    "SearcherCache",
    "Sender",
    "StartAllocation",
    "StorageAccess",
    "Transactor",
    "Tx",
    "Wake",
    "account_state_change",
    "active_time",
    "add_note",
    "aux_placement",
    "checkpoint",
    "container_problem",
    "endpoint_limit",
    "exit_reason",
    "follow_logs",
    "job_container",
    "job_in_containers",
    "job_label",
    "kind_of",
    "kinds_of",
    "offered_labels",
    "pod_image_problem",
    "pull_problem",
    "request_label",
    "runs_containers",
    "slurm_problem",
    "trial_container",
    "trial_image",
    "views",
    "zeros",
]
