"""``det.core.init()``: assay's harness under Determined's signature."""

from __future__ import annotations

import enum
import os
from typing import Any

import assay.core
from assay.core import Context, PreemptMode

from ._distributed import DistributedContext, DummyDistributedContext


class DownloadMode(enum.Enum):
    """Accepted for compatibility: every process that restores a checkpoint reads it from
    storage itself."""

    LocalWorkersShareDownload = "LOCAL_WORKERS_SHARE_DOWNLOAD"
    NoSharedDownload = "NO_SHARED_DOWNLOAD"


class TensorboardMode(enum.Enum):
    """Accepted for compatibility: assay keeps no TensorBoard files for a trial."""

    AUTO = "AUTO"
    MANUAL = "MANUAL"


def init(
    *,
    distributed: DistributedContext | None = None,
    checkpoint_storage: str | dict[str, Any] | None = None,
    preempt_mode: PreemptMode = PreemptMode.WorkersAskChief,
    tensorboard_mode: TensorboardMode = TensorboardMode.AUTO,
    async_checkpointing: bool = True,
) -> Context:
    """The Core API context (:func:`assay.core.init`): ``train``, ``checkpoint``, ``preempt``,
    ``searcher``, ``distributed`` and ``info``, as a context manager. Off-cluster it runs
    against local stand-ins (checkpoints in ``./checkpoints``, metrics logged).

    Without ``distributed``, a process a launcher started as one of several ranks joins them
    (only the chief then reports), where Determined would make every rank a chief of one."""
    if distributed is None:
        several = int(os.environ.get("WORLD_SIZE", "1")) > 1
        distributed = (
            DistributedContext.from_torch_distributed() if several else DummyDistributedContext()
        )
    return assay.core.init(
        distributed=distributed,
        checkpoint_storage=checkpoint_storage,
        preempt_mode=preempt_mode,
        tensorboard_mode=tensorboard_mode,
        async_checkpointing=async_checkpointing,
    )
