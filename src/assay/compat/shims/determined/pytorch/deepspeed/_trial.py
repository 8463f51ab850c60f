"""``det.pytorch.deepspeed.DeepSpeedTrial``: the class a Determined DeepSpeed model
subclasses."""

from __future__ import annotations

import abc
import pathlib
from collections.abc import Iterator
from typing import Any

import torch

from .._callback import PyTorchCallback
from .._data import DataLoader, TorchData, data_length
from .._reducer import Reducer
from ._context import DeepSpeedTrialContext


class DeepSpeedTrial(abc.ABC):
    """Build the engines with ``deepspeed.initialize`` in ``__init__`` and register them with
    ``context.wrap_model_engine``; define ``train_batch``, ``evaluate_batch`` (or
    ``evaluate_full_dataset``) and the two data loaders. ``train_batch`` and ``evaluate_batch``
    are handed the data loader's iterator and draw their micro batches from it."""

    trial_context_class = DeepSpeedTrialContext

    @abc.abstractmethod
    def __init__(self, context: DeepSpeedTrialContext) -> None:
        """Build the model engines and wrap them."""

    @abc.abstractmethod
    def train_batch(
        self,
        dataloader_iter: Iterator[TorchData] | None,
        epoch_idx: int,
        batch_idx: int,
    ) -> torch.Tensor | dict[str, Any]:
        """Train on one micro batch drawn from ``dataloader_iter`` (forward, ``engine.backward``,
        ``engine.step``): it is called ``gradient_accumulation_steps`` times a batch, unless
        the context's ``disable_auto_grad_accumulation()`` was called (then once, for all of
        them) or the engine is a ``PipelineEngine`` (whose ``train_batch`` draws them all)."""

    @abc.abstractmethod
    def build_training_data_loader(self) -> DataLoader | None:
        """The training data in micro batches (``train_micro_batch_size_per_gpu`` records),
        as a ``det.pytorch.DataLoader``."""

    @abc.abstractmethod
    def build_validation_data_loader(self) -> DataLoader | None:
        """The validation data, as a ``det.pytorch.DataLoader``."""

    def build_callbacks(self) -> dict[str, PyTorchCallback]:
        """Callbacks by name (the name keys their state in checkpoints)."""
        return {}

    def evaluate_batch(
        self, dataloader_iter: Iterator[TorchData] | None, batch_idx: int
    ) -> dict[str, Any]:
        """Metrics of one validation batch drawn from ``dataloader_iter``, reduced over the
        batches by :meth:`evaluation_reducer` (each data-parallel rank validates its share)."""
        raise NotImplementedError

    def evaluate_full_dataset(
        self, data_loader: torch.utils.data.DataLoader[Any]
    ) -> dict[str, Any]:
        """Metrics of the whole validation set, computed by the chief alone."""
        raise NotImplementedError

    def evaluation_reducer(self) -> Reducer | dict[str, Reducer]:
        """How ``evaluate_batch``'s metrics are reduced: one reducer, or one per metric."""
        return Reducer.AVG

    def save(self, context: DeepSpeedTrialContext, path: pathlib.Path) -> None:
        """Called on every rank to write the engines into the checkpoint directory ``path``:
        by default each engine's ``save_checkpoint(path, tag=f"model{i}")``."""
        for i, engine in enumerate(context.models):
            engine.save_checkpoint(path, tag=f"model{i}")

    def load(self, context: DeepSpeedTrialContext, load_path: pathlib.Path) -> None:
        """Called on every rank to restore the engines from the checkpoint directory
        ``load_path``: by default each engine's ``load_checkpoint(load_path, tag=f"model{i}")``."""
        for i, engine in enumerate(context.models):
            try:
                loaded, _ = engine.load_checkpoint(load_path, tag=f"model{i}")
            except AssertionError as exc:
                # DeepSpeed's loader asserts, mostly without a message.
                raise AssertionError(
                    f"DeepSpeed could not load model engine {i} from {load_path / f'model{i}'}"
                    f"{f': {exc}' if str(exc) else ''}"
                ) from exc
            if loaded is None:
                # DeepSpeed only logs a missing checkpoint; training on from scratch would
                # pass for a resumption.
                raise FileNotFoundError(
                    f"the checkpoint holds no DeepSpeed checkpoint of model engine {i} "
                    f"({load_path / f'model{i}'})"
                )

    def get_batch_length(self, batch: Any) -> int:
        """The number of records in ``batch``."""
        return data_length(batch)
