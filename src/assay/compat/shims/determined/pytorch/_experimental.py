"""``context.experimental``: Determined's switches that are not yet part of the main API."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import torch


class _Trial(Protocol):
    """What the switches need of the trial's context (``PyTorchTrialContext``)."""

    @property
    def device(self) -> torch.device: ...

    def wrap_scaler(self, scaler: Any) -> Any: ...


class PyTorchExperimentalContext:
    def __init__(self, context: _Trial) -> None:
        self._context = context
        self._auto_amp = False
        self._data_repro_checks_disabled = False
        self._auto_to_device = True

    def use_amp(self) -> None:
        """Automatic mixed precision: the models' forward passes under autocast, the loss
        scaled in ``backward`` and the optimizer stepped through a ``GradScaler``."""
        import torch

        self._context.wrap_scaler(
            torch.amp.GradScaler("cuda" if self._context.device.type == "cuda" else "cpu")
        )
        self._auto_amp = True

    def disable_dataset_reproducibility_checks(self) -> None:
        """Let the data loader builders return plain ``torch.utils.data.DataLoader`` objects
        (their order, sharding and resumption are then the trial's own business)."""
        self._data_repro_checks_disabled = True

    def disable_auto_to_device(self) -> None:
        """Leave batches where the data loader put them (``train_batch`` moves them)."""
        self._auto_to_device = False
