"""``determined.pytorch.samplers``: building blocks that make a data order reproducible,
shardable across ranks and resumable at a batch (shuffle, then skip, then repeat)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch.utils.data

__all__ = [
    "DistributedBatchSampler",
    "DistributedSampler",
    "RepeatBatchSampler",
    "RepeatSampler",
    "ReproducibleShuffleBatchSampler",
    "ReproducibleShuffleSampler",
    "SkipBatchSampler",
    "SkipSampler",
]


def _shuffled(items: list[Any], rng: Any) -> list[Any]:
    rng.shuffle(items)
    return items


def _rng(seed: int) -> Any:
    # numpy's RandomState, as Determined shuffles: the same seed gives Determined's order.
    import numpy as np

    return np.random.RandomState(seed)


class RepeatSampler(torch.utils.data.Sampler):  # type: ignore[type-arg]
    """Yields the samples of ``sampler`` again and again; its length is one pass."""

    def __init__(self, sampler: Any) -> None:
        self._sampler = sampler

    def __len__(self) -> int:
        return len(self._sampler)

    def __iter__(self) -> Iterator[Any]:
        while True:
            yield from self._sampler


class RepeatBatchSampler(torch.utils.data.BatchSampler):
    """Yields the batches of ``batch_sampler`` again and again; its length is one pass."""

    def __init__(self, batch_sampler: Any) -> None:
        self.batch_sampler = batch_sampler

    def __len__(self) -> int:
        return len(self.batch_sampler)

    def __iter__(self) -> Iterator[Any]:
        while True:
            yield from self.batch_sampler


class DistributedSampler(torch.utils.data.Sampler):  # type: ignore[type-arg]
    """This rank's share of ``sampler``: every ``num_workers``-th sample from ``rank``."""

    def __init__(self, sampler: Any, num_workers: int, rank: int) -> None:
        self._sampler = sampler
        self._num_workers = num_workers
        self._rank = rank

    def __len__(self) -> int:
        n = len(self._sampler)
        return n // self._num_workers + int(n % self._num_workers > self._rank)

    def __iter__(self) -> Iterator[Any]:
        for i, sample in enumerate(self._sampler):
            if i % self._num_workers == self._rank:
                yield sample


class DistributedBatchSampler(torch.utils.data.BatchSampler):
    """This rank's share of ``batch_sampler``: every ``num_workers``-th batch from ``rank``."""

    def __init__(self, batch_sampler: Any, num_workers: int, rank: int) -> None:
        if num_workers < 1:
            raise ValueError(f"num_workers must be at least 1, got {num_workers}")
        if not 0 <= rank < num_workers:
            raise ValueError(f"rank must be in [0, {num_workers}), got {rank}")
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.rank = rank

    def __len__(self) -> int:
        n = len(self.batch_sampler)
        return n // self.num_workers + int(n % self.num_workers > self.rank)

    def __iter__(self) -> Iterator[Any]:
        for i, batch in enumerate(self.batch_sampler):
            if i % self.num_workers == self.rank:
                yield batch


class SkipSampler(torch.utils.data.BatchSampler):
    """Skips the first ``skip`` items of ``sampler``; its length is the sampler's."""

    def __init__(self, sampler: Any, skip: int) -> None:
        self._sampler = sampler
        self._skip = skip

    def __len__(self) -> int:
        return len(self._sampler)

    def __iter__(self) -> Iterator[Any]:
        iterator = iter(self._sampler)
        for _ in range(self._skip):
            if next(iterator, _END) is _END:
                return
        yield from iterator


_END = object()


class SkipBatchSampler(torch.utils.data.BatchSampler):
    """Skips the first ``skip`` batches of ``batch_sampler`` (to resume where a checkpoint was
    taken); its length is the sampler's."""

    def __init__(self, batch_sampler: Any, skip: int) -> None:
        self.batch_sampler = batch_sampler
        self.skip = skip

    def __len__(self) -> int:
        return len(self.batch_sampler)

    def __iter__(self) -> Iterator[Any]:
        iterator = iter(self.batch_sampler)
        for _ in range(self.skip):
            if next(iterator, _END) is _END:
                return
        yield from iterator


class ReproducibleShuffleSampler(torch.utils.data.Sampler):  # type: ignore[type-arg]
    """``sampler``'s samples in an order drawn from ``seed``: a new order each pass, the same
    sequence of orders for the same seed."""

    def __init__(self, sampler: Any, seed: int) -> None:
        self._sampler = sampler
        self._rng = _rng(seed)

    def __iter__(self) -> Iterator[Any]:
        return iter(_shuffled(list(self._sampler), self._rng))

    def __len__(self) -> int:
        return len(self._sampler)


class ReproducibleShuffleBatchSampler(torch.utils.data.Sampler):  # type: ignore[type-arg]
    """``batch_sampler``'s batches in an order drawn from ``seed``."""

    def __init__(self, batch_sampler: Any, seed: int) -> None:
        self._batch_sampler = batch_sampler
        self._rng = _rng(seed)

    def __iter__(self) -> Iterator[Any]:
        return iter(_shuffled(list(self._batch_sampler), self._rng))

    def __len__(self) -> int:
        return len(self._batch_sampler)
