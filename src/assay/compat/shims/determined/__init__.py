"""assay's ``determined``: Determined's Core API, run on :mod:`assay.core`.

``import determined as det`` in a trial finds this package first on ``PYTHONPATH`` (the agent
puts it there), even where the trial's environment has Determined installed, so Determined
training code runs unchanged under assay. The first import in a trial's process tree says so
once in the trial log.
"""

from __future__ import annotations

from assay.core import ClusterInfo, InvalidHP, TrialInfo, get_cluster_info

from . import core
from ._announce import announce

LOG_FORMAT = "%(levelname)s: [%(process)s] %(name)s: %(message)s"
"""Determined's logging format (``logging.basicConfig(format=det.LOG_FORMAT)``)."""

__version__ = "0.38.0+assay"
"""The Determined release whose Core API this package follows."""

__all__ = [
    "LOG_FORMAT",
    "ClusterInfo",
    "InvalidHP",
    "TrialInfo",
    "core",
    "get_cluster_info",
]

announce()
