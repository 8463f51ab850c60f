"""Resource managers: what runs a pool's allocations, behind one small protocol.

A pool's ``type`` in the master's configuration picks one: ``agents`` (assay's own agents,
connected over their WebSocket; the master's scheduler places the work), ``slurm`` (each
allocation a Slurm job) or ``kubernetes`` (each allocation a pod). :mod:`assay.rm.testing` is
the conformance kit every implementation runs.
"""

from __future__ import annotations

from assay.agent import LocalProcesses
from assay.protocol import Report, ResourceManager
from assay.rm._kubernetes import KubernetesManager
from assay.rm._slurm import SlurmManager, SlurmPool

__all__ = [
    "KubernetesManager",
    "LocalProcesses",
    "Report",
    "ResourceManager",
    "SlurmManager",
    "SlurmPool",
]
