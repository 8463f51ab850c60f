"""assay: train deep-learning models on your own machines.

Training code uses ``assay.core`` (the Core API) and ``assay.get_cluster_info()``; the ``assay``
command drives a cluster.
"""

from __future__ import annotations

from assay import core
from assay.core import ClusterInfo, InvalidHP, TrialInfo, get_cluster_info

__version__ = "0.1.0"

LOG_FORMAT = "%(levelname)s: [%(process)s] %(name)s: %(message)s"

__all__ = [
    "LOG_FORMAT",
    "ClusterInfo",
    "InvalidHP",
    "TrialInfo",
    "__version__",
    "core",
    "get_cluster_info",
]
