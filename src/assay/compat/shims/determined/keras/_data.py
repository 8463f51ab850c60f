"""What a ``TFKerasTrial``'s data loaders may return (``InputData``): a ``(x, y)`` or
``(x, y, sample_weights)`` tuple of arrays, a ``keras.utils.Sequence`` (Keras 3's
``PyDataset``), a ``SequenceAdapter`` around one, or a ``tf.data.Dataset``; and the order in
which a Sequence's batches are trained, so that a resumed trial picks up at the very batch an
uninterrupted one would have trained next."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, Union

import numpy as np
import tensorflow as tf
from keras.utils import PyDataset

from ._trial_errors import InvalidDataTypeException

ArrayLike = Union[np.ndarray, list[np.ndarray], dict[str, np.ndarray]]  # noqa: UP007
"""One array, a list of arrays (several inputs) or a dict of them (named inputs)."""

InputData = Union[PyDataset, tf.data.Dataset, "SequenceAdapter", tuple[Any, ...]]
"""What ``build_training_data_loader`` and ``build_validation_data_loader`` may return."""

_LOADER_DOC = (
    "a data loader returns (x, y) or (x, y, sample_weights) of numpy arrays (x may be a list or "
    "dict of arrays), a keras.utils.Sequence, or a tf.data.Dataset wrapped with "
    "context.wrap_dataset()"
)


def _is_arrays(value: Any) -> bool:
    if isinstance(value, np.ndarray):
        return True
    if isinstance(value, list | tuple):
        return bool(value) and all(isinstance(v, np.ndarray) for v in value)
    if isinstance(value, dict):
        return bool(value) and all(isinstance(v, np.ndarray) for v in value.values())
    return False


def _length(value: ArrayLike) -> int:
    if isinstance(value, np.ndarray):
        return len(value)
    if isinstance(value, dict):
        return len(next(iter(value.values())))
    return len(value[0])


def _slice(value: ArrayLike, start: int, end: int) -> Any:
    if isinstance(value, np.ndarray):
        return value[start:end]
    if isinstance(value, dict):
        return {name: array[start:end] for name, array in value.items()}
    return [array[start:end] for array in value]


class _ArrayLikeAdapter(PyDataset):  # type: ignore[misc]
    """Arrays as a Sequence of batches of ``batch_size`` records (the last one may be short,
    unless ``drop_leftovers``)."""

    def __init__(
        self,
        x: ArrayLike,
        y: ArrayLike,
        batch_size: int,
        sample_weights: np.ndarray | None = None,
        drop_leftovers: bool = False,
    ) -> None:
        super().__init__()
        for name, value in (("x", x), ("y", y)):
            if not _is_arrays(value):
                raise InvalidDataTypeException(
                    type(value), f"{name} must be a numpy array or a list or dict of them: "
                    f"{_LOADER_DOC}"
                )  # fmt: skip
        records = _length(x)
        if _length(y) != records:
            raise ValueError(f"x has {records} records but y has {_length(y)}")
        if records < batch_size:
            raise ValueError(
                f"the batch size {batch_size} is larger than the data's {records} records"
            )
        if sample_weights is not None and len(sample_weights) != records:
            raise ValueError(
                f"x has {records} records but sample_weights has {len(sample_weights)}"
            )
        self.x, self.y, self.sample_weight = x, y, sample_weights
        self.batch_size = batch_size
        self.drop_leftovers = drop_leftovers
        self._records = records

    def __len__(self) -> int:
        rounded = math.floor if self.drop_leftovers else math.ceil
        return int(rounded(self._records / self.batch_size))

    def __getitem__(self, index: int) -> tuple[Any, ...]:
        start = index * self.batch_size
        end = min(start + self.batch_size, self._records)
        batch = (_slice(self.x, start, end), _slice(self.y, start, end))
        if self.sample_weight is None:
            return batch
        return (*batch, self.sample_weight[start:end])


class SequenceAdapter:
    """Deprecated by Determined: use ``context.configure_fit()`` instead. A Sequence with the
    loading options of ``fit()`` (taken as ``configure_fit`` arguments)."""

    def __init__(
        self,
        sequence: PyDataset,
        use_multiprocessing: bool = False,
        workers: int = 1,
        max_queue_size: int = 10,
    ) -> None:
        self.sequence = sequence
        self.use_multiprocessing = use_multiprocessing
        self.workers = workers
        self.max_queue_size = max_queue_size


def _is_sequence(value: Any) -> bool:
    # A Keras 2 style Sequence that never called PyDataset.__init__ is still one.
    return isinstance(value, PyDataset) or (
        hasattr(value, "__getitem__")
        and hasattr(value, "__len__")
        and hasattr(value, "on_epoch_end")
    )


def _adapt_data_from_data_loader(input_data: Any, batch_size: int) -> Any:
    """A Sequence, a ``SequenceAdapter`` or a dataset as it is; a tuple of arrays as a
    Sequence of batches of ``batch_size``."""
    if isinstance(input_data, tf.data.Dataset | SequenceAdapter) or _is_sequence(input_data):
        return input_data
    if not isinstance(input_data, tuple) or len(input_data) not in (2, 3):
        raise InvalidDataTypeException(type(input_data), _LOADER_DOC)
    weights = input_data[2] if len(input_data) == 3 else None
    return _ArrayLikeAdapter(input_data[0], input_data[1], batch_size, weights)


class _Sampler:
    """The order of a Sequence's batches: epoch after epoch, each shuffled from ``seed`` when
    ``shuffle`` (the order of every epoch follows from the seed alone), starting after the
    ``skip`` batches a resumed trial already trained."""

    def __init__(self, length: int, shuffle: bool, seed: int, skip: int) -> None:
        if length < 1:
            raise ValueError("the training Sequence has no batches")
        self.order = list(range(length))
        self.shuffle = shuffle
        self.rng = np.random.RandomState(seed) if shuffle else None
        self._new_order()
        epochs, self.position = divmod(skip, length)
        for _ in range(epochs):
            self._new_order()

    def _new_order(self) -> None:
        if self.rng is not None:
            self.rng.shuffle(self.order)

    def epoch(self) -> Iterator[int]:
        """The rest of this epoch's batch indices; the next epoch's order is drawn after."""
        while self.position < len(self.order):
            index = self.order[self.position]
            self.position += 1
            yield index
        self.position = 0
        self._new_order()


def _class_weighted(batch: tuple[Any, ...], class_weight: dict[int, float]) -> tuple[Any, ...]:
    """The batch with its sample weights multiplied by its classes' weights (Keras 3 takes no
    ``class_weight`` for a Python generator, so it is applied here as Keras would)."""
    x, y = batch[0], np.asarray(batch[1])
    if y.ndim > 1 and y.shape[-1] > 1:
        classes = np.argmax(y, axis=-1)
    else:
        classes = np.rint(y.reshape(len(y), -1)[:, 0]).astype(int)
    weights = np.array([class_weight.get(int(c), 1.0) for c in classes], dtype="float32")
    if len(batch) == 3:
        weights = weights * np.asarray(batch[2], dtype="float32")
    return x, batch[1], weights


def training_batches(
    sequence: Any,
    *,
    shuffle: bool,
    seed: int,
    skip: int,
    class_weight: dict[int, float] | None,
) -> Iterator[tuple[Any, ...]]:
    """A Sequence's batches forever, in the sampler's order, its ``on_epoch_end`` called
    after each epoch as Keras would."""
    sampler = _Sampler(len(sequence), shuffle, seed, skip)
    while True:
        for index in sampler.epoch():
            batch = tuple(sequence[index])
            yield _class_weighted(batch, class_weight) if class_weight else batch
        sequence.on_epoch_end()


def validation_batches(sequence: Any) -> Iterator[tuple[Any, ...]]:
    """Every batch of a Sequence once, in order."""
    for index in range(len(sequence)):
        yield tuple(sequence[index])
