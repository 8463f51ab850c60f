"""Training lengths and periods: ``Batch`` and ``Epoch`` (Determined's ``TrainUnit``)."""

from __future__ import annotations

import sys
from collections.abc import Container
from dataclasses import dataclass


class TrainUnit:
    """A length or period in batches or epochs: an int is a period (``Batch(100)``: every 100
    batches), a container a schedule (``Batch([5, 30])``: after batches 5 and 30)."""

    def __init__(self, value: int | Container[int]) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"{type(self).__name__}(value={self.value!r})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.value == self.value  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, repr(self.value)))

    @staticmethod
    def _from_values(
        batches: int | None = None,
        records: int | None = None,
        epochs: int | None = None,
        global_batch_size: int | None = None,
    ) -> TrainUnit:
        """A period from a config's length (``{batches: N}``...); 0 or less means never."""
        if sum(v is not None for v in (batches, records, epochs)) != 1:
            raise ValueError(
                f"a length needs exactly one of batches, records or epochs; got batches={batches} "
                f"records={records} epochs={epochs}"
            )
        if batches is not None:
            return Batch(batches if batches >= 1 else sys.maxsize)
        if records is not None:
            if records < 1:
                return Batch(sys.maxsize)
            if not global_batch_size:
                raise ValueError(
                    "a length in records needs hyperparameters.global_batch_size to count batches"
                )
            return Batch._from_records(records, global_batch_size)
        assert epochs is not None
        return Epoch(epochs if epochs >= 1 else sys.maxsize)

    @staticmethod
    def _from_searcher_unit(length: int, unit: str, global_batch_size: int | None) -> TrainUnit:
        """A searcher's length (``unit`` is ``batches``, ``records`` or ``epochs``)."""
        return TrainUnit._from_values(**{unit: length}, global_batch_size=global_batch_size)

    def should_stop(self, step_num: int) -> bool:
        """Whether ``step_num`` (batches or epochs done) ends a period of this unit."""
        if isinstance(self.value, int):
            if self.value < 1:
                return True
            return step_num != 0 and step_num % self.value == 0
        return step_num in self.value


class Epoch(TrainUnit):
    """Epochs: ``Epoch(2)`` is every second epoch, ``Epoch([1, 5])`` after epochs 1 and 5."""


class Batch(TrainUnit):
    """Batches: ``Batch(100)`` is every 100 batches, ``Batch([5, 30])`` after batches 5 and 30."""

    @staticmethod
    def _from_records(records: int, global_batch_size: int) -> Batch:
        return Batch(max(records // global_batch_size, 1))


class ShouldExit(Exception):
    """Ends the training loop from inside it (a preemption, a stop the trial asked for)."""

    def __init__(self, skip_exit_checkpoint: bool = False) -> None:
        super().__init__()
        self.skip_exit_checkpoint = skip_exit_checkpoint


@dataclass
class TrialState:
    """What a checkpoint records of the loop (``trial_state.pkl``, Determined's fields)."""

    trial_id: int = 0
    last_ckpt: int = 0
    step_id: int = 0
    last_val: int = 0
    batches_trained: int = 0
    epochs_trained: int = 0
