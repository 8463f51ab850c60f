"""The harness ("Core API"): what training code imports to run under assay.

Mirrors Determined's Core API: ``with assay.core.init() as ctx:`` gives ``ctx.train``,
``ctx.checkpoint``, ``ctx.preempt``, ``ctx.searcher``, ``ctx.distributed`` and ``ctx.info``;
raising :class:`InvalidHP` inside it ends the trial as one with unusable hyperparameters.
Importing it pulls in neither the server stack nor numpy.
"""

from __future__ import annotations

from assay.core._checkpoint import CheckpointContext
from assay.core._context import Context, init
from assay.core._distributed import DistributedContext, DistributedError
from assay.core._info import get_cluster_info
from assay.core._preempt import PreemptContext, PreemptMode
from assay.core._searcher import SearcherContext, SearcherMode, SearcherOperation
from assay.core._train import EarlyExitReason, InvalidHP, TrainContext
from assay.protocol import ClusterInfo, TrialInfo

__all__ = [
    "CheckpointContext",
    "ClusterInfo",
    "Context",
    "DistributedContext",
    "DistributedError",
    "EarlyExitReason",
    "InvalidHP",
    "PreemptContext",
    "PreemptMode",
    "SearcherContext",
    "SearcherMode",
    "SearcherOperation",
    "TrainContext",
    "TrialInfo",
    "get_cluster_info",
    "init",
]
