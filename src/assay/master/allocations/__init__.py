"""Where work runs: the scheduling pass over every pool, gangs, the agents'
gateway, the pools Slurm and Kubernetes run, the autoscaler, the master's loops and the
cluster's drain.
"""

from __future__ import annotations

from assay.master.allocations._autoscaler import Autoscaler
from assay.master.allocations._drain import ClusterDrain
from assay.master.allocations._gateway import SETTLE_LIMITS, AgentGateway
from assay.master.allocations._inbox import Inbox
from assay.master.allocations._loops import Loops
from assay.master.allocations._pools import ResourcePools

__all__ = [
    "SETTLE_LIMITS",
    "AgentGateway",
    "Autoscaler",
    "ClusterDrain",
    "Inbox",
    "Loops",
    "ResourcePools",
]
