"""``det.pytorch.PyTorchTrial``: the class a Determined PyTorch model subclasses."""

from __future__ import annotations

import abc
from typing import Any

import torch

from ._callback import PyTorchCallback
from ._context import PyTorchTrialContext
from ._data import DataLoader, TorchData, data_length
from ._reducer import Reducer


class PyTorchTrial(abc.ABC):
    """Wrap models, optimizers and schedulers in ``__init__`` with the context; define
    ``train_batch``, the two data loaders, and exactly one of ``evaluate_batch`` and
    ``evaluate_full_dataset``."""

    trial_context_class = PyTorchTrialContext

    @abc.abstractmethod
    def __init__(self, context: PyTorchTrialContext) -> None:
        """Build and wrap the model, optimizers and LR schedulers."""

    @abc.abstractmethod
    def train_batch(
        self, batch: TorchData, epoch_idx: int, batch_idx: int
    ) -> torch.Tensor | dict[str, Any]:
        """Train on one batch (``context.backward``, ``context.step_optimizer``); return its
        metrics (a loss tensor alone is reported as ``loss``)."""

    @abc.abstractmethod
    def build_training_data_loader(self) -> DataLoader:
        """The training data, as a ``det.pytorch.DataLoader``."""

    @abc.abstractmethod
    def build_validation_data_loader(self) -> DataLoader:
        """The validation data, as a ``det.pytorch.DataLoader``."""

    def build_callbacks(self) -> dict[str, PyTorchCallback]:
        """Callbacks by name (the name keys their state in checkpoints)."""
        return {}

    def evaluate_batch(self, batch: TorchData, batch_idx: int) -> dict[str, Any]:
        """Metrics of one validation batch, reduced over the batches by
        :meth:`evaluation_reducer` (each rank validates its share)."""
        raise NotImplementedError

    def evaluation_reducer(self) -> Reducer | dict[str, Reducer]:
        """How ``evaluate_batch``'s metrics are reduced: one reducer, or one per metric."""
        return Reducer.AVG

    def evaluate_full_dataset(
        self, data_loader: torch.utils.data.DataLoader[Any]
    ) -> dict[str, Any]:
        """Metrics of the whole validation set, computed by the chief alone."""
        raise NotImplementedError

    def get_batch_length(self, batch: Any) -> int:
        """The number of records in ``batch`` (for throughput)."""
        return data_length(batch)
