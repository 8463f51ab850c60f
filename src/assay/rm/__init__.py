"""Resource managers: what runs a pool's allocations, behind one small protocol.

A pool's ``type`` in the master's configuration picks one: ``agents`` (assay's own agents,
connected over their WebSocket: :class:`AgentSockets` on the master's side, each agent's
:class:`LocalProcesses` on its own), ``slurm`` (each allocation a Slurm job) or
``kubernetes`` (each allocation a pod). The master reaches every pool through the protocol;
:mod:`assay.rm.testing` is the conformance kit every implementation runs.
"""

from __future__ import annotations

from assay.agent import LocalProcesses
from assay.protocol import Report, ResourceManager
from assay.rm._agents import AgentGone, AgentSockets, SocketSend
from assay.rm._kubernetes import KubernetesManager
from assay.rm._slurm import SlurmManager, SlurmPool

__all__ = [
    "AgentGone",
    "AgentSockets",
    "KubernetesManager",
    "LocalProcesses",
    "Report",
    "ResourceManager",
    "SlurmManager",
    "SlurmPool",
    "SocketSend",
]
