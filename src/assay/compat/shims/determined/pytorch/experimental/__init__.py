"""``determined.pytorch.experimental``: Determined's batch inference,
:func:`torch_batch_process`."""

from __future__ import annotations

from ._batch_process import (
    TorchBatchProcessor,
    TorchBatchProcessorContext,
    get_default_device,
    torch_batch_process,
)

__all__ = [
    "TorchBatchProcessor",
    "TorchBatchProcessorContext",
    "get_default_device",
    "torch_batch_process",
]
