"""assay's ``determined``: Determined's Core API, run on :mod:`assay.core`.

``import determined as det`` in a trial finds this package first on ``PYTHONPATH`` (the agent
puts it there), even where the trial's environment has Determined installed, so Determined
training code runs unchanged under assay. The first import in a trial's process tree says so
once in the trial log. Where the trial's Python has Determined's own package too, what this one
lacks (``determined.experimental.client``, ``determined.common``) comes from there
(:mod:`._upstream`); its clients reach the master as the experiment's owner (``DET_MASTER``,
``DET_USER`` and ``DET_USER_TOKEN`` are set for every trial).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.core import ClusterInfo, InvalidHP, TrialInfo, get_cluster_info

from . import _upstream, core
from ._announce import announce

_DETERMINED = _upstream.extend(__path__, Path(__file__).resolve().parent)

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


def __getattr__(name: str) -> Any:
    return _upstream.attribute(_DETERMINED, name)


announce()
