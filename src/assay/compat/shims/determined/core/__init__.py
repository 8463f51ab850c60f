"""``det.core``: Determined's Core API (``with det.core.init() as core_context:``)."""

from __future__ import annotations

from assay.core import (
    CheckpointContext,
    Context,
    EarlyExitReason,
    PreemptContext,
    PreemptMode,
    SearcherContext,
    SearcherMode,
    SearcherOperation,
    TrainContext,
)

from ._context import DownloadMode, TensorboardMode, init
from ._distributed import DistributedContext, DummyDistributedContext

__all__ = [
    "CheckpointContext",
    "Context",
    "DistributedContext",
    "DownloadMode",
    "DummyDistributedContext",
    "EarlyExitReason",
    "PreemptContext",
    "PreemptMode",
    "SearcherContext",
    "SearcherMode",
    "SearcherOperation",
    "TensorboardMode",
    "TrainContext",
    "init",
]
