"""``det.pytorch.DataLoader``: a ``torch.utils.data.DataLoader`` described, built when training
starts so that the loop can repeat it, shard it across ranks and resume it at a batch."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import torch
from torch.utils import data

from . import samplers

log = logging.getLogger("determined.pytorch")

TorchData = dict[str, torch.Tensor] | list[torch.Tensor] | tuple[torch.Tensor, ...] | torch.Tensor
"""What a batch may be: a tensor, or a dict, list or tuple of them."""


class DataLoader:
    """Takes ``torch.utils.data.DataLoader``'s arguments; the real loader is made by
    :meth:`get_data_loader`. Training repeats it, shards it by global batch across the ranks
    (each rank gets every N-th batch) and, resumed from a checkpoint, skips the batches already
    trained. With ``shuffle=True`` and no ``generator``, the order is drawn from the trial's
    seed, so a resumed trial sees exactly the batches an uninterrupted one would."""

    def __init__(
        self,
        dataset: data.Dataset[Any],
        batch_size: int | None = 1,
        shuffle: bool = False,
        sampler: Any = None,
        batch_sampler: Any = None,
        num_workers: int = 0,
        collate_fn: Any = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Any = None,
        multiprocessing_context: Any = None,
        generator: Any = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
    ) -> None:
        if isinstance(dataset, data.IterableDataset):
            raise ValueError(
                "det.pytorch.DataLoader takes a map-style Dataset, not an IterableDataset: an "
                "iterable one cannot be sharded or resumed by batch; return a "
                "torch.utils.data.DataLoader of your own and call "
                "context.experimental.disable_dataset_reproducibility_checks()"
            )
        if batch_sampler is None and batch_size is None:
            raise ValueError("det.pytorch.DataLoader needs batch_size or batch_sampler")
        if num_workers < 0:
            raise ValueError(f"num_workers must be >= 0, got {num_workers}")
        if sampler is not None and shuffle:
            raise ValueError("sampler and shuffle=True cannot be given together")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler cannot be given with batch_size, shuffle, sampler or drop_last"
                )
            batch_size, drop_last = None, False
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.num_workers = num_workers
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.generator = generator
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        self._seeded_shuffle = shuffle and generator is None
        if sampler is None:
            sampler = (
                data.RandomSampler(dataset, generator=generator)  # type: ignore[arg-type]
                if shuffle
                else data.SequentialSampler(dataset)  # type: ignore[arg-type]
            )
        if batch_sampler is None:
            assert batch_size is not None
            batch_sampler = data.BatchSampler(sampler, batch_size, drop_last)
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.collate_fn = collate_fn or (
            data.default_collate if batch_sampler is not None else data.default_convert
        )

    def get_data_loader(
        self,
        repeat: bool = False,
        skip: int = 0,
        num_replicas: int = 1,
        rank: int = 0,
        seed: int = 0,
    ) -> data.DataLoader[Any]:
        """The loader: repeated (training), this rank's batches of every ``num_replicas``,
        after skipping ``skip`` of them (batches already trained)."""
        batch_sampler = self.batch_sampler
        if self._seeded_shuffle:
            order = samplers.ReproducibleShuffleSampler(
                data.SequentialSampler(self.dataset),  # type: ignore[arg-type]
                seed,
            )
            assert self.batch_size is not None
            batch_sampler = data.BatchSampler(order, self.batch_size, self.drop_last)
        batch_sampler = adapt_batch_sampler(batch_sampler, repeat, skip, num_replicas, rank)
        return data.DataLoader(
            self.dataset,
            batch_sampler=batch_sampler,
            num_workers=self.num_workers,
            collate_fn=self.collate_fn,
            pin_memory=self.pin_memory,
            timeout=self.timeout,
            worker_init_fn=self.worker_init_fn,
            multiprocessing_context=self.multiprocessing_context,
            generator=self.generator,
            prefetch_factor=self.prefetch_factor,
            persistent_workers=self.persistent_workers,
        )

    def __iter__(self) -> Iterator[Any]:
        return iter(self.get_data_loader())

    def __len__(self) -> int:
        return len(self.batch_sampler)


def adapt_batch_sampler(
    batch_sampler: Any, repeat: bool = False, skip: int = 0, num_replicas: int = 1, rank: int = 0
) -> Any:
    """Repeat, then shard, then skip: the skip counts the batches this rank was given."""
    if repeat:
        batch_sampler = samplers.RepeatBatchSampler(batch_sampler)
    if num_replicas > 1:
        batch_sampler = samplers.DistributedBatchSampler(batch_sampler, num_replicas, rank)
    if skip > 0:
        batch_sampler = samplers.SkipBatchSampler(batch_sampler, skip)
    return batch_sampler


def data_length(batch: Any) -> int:
    """The number of records in a batch: the length of its first tensor."""
    if isinstance(batch, torch.Tensor) or (hasattr(batch, "__array__") and hasattr(batch, "shape")):
        return len(batch)
    if isinstance(batch, dict):
        if not batch:
            raise ValueError("a batch that is a dict needs at least one tensor in it")
        return data_length(next(iter(batch.values())))
    if isinstance(batch, list | tuple):
        if not batch:
            raise ValueError(f"a batch that is a {type(batch).__name__} needs a tensor in it")
        return data_length(batch[0])
    raise TypeError(f"cannot count the records of a batch of type {type(batch).__name__}")


def to_device(batch: Any, device: torch.device, warned: set[type] | None = None) -> Any:
    """``batch`` with every tensor (and numpy array of numbers) moved to ``device``."""
    warned = set() if warned is None else warned
    if isinstance(batch, dict):
        return {k: to_device(v, device, warned) for k, v in batch.items()}
    if isinstance(batch, list):
        return [to_device(v, device, warned) for v in batch]
    if isinstance(batch, tuple):
        return tuple(to_device(v, device, warned) for v in batch)
    if (
        hasattr(batch, "dtype")
        and getattr(batch.dtype, "kind", "") in "fciub"
        and not hasattr(batch, "to")
    ):
        return torch.from_numpy(batch).to(device)
    move = getattr(batch, "to", None)
    if callable(move):
        return move(device)
    if type(batch) not in warned:
        warned.add(type(batch))
        log.warning("could not move a batch item of type %s to the device", type(batch).__name__)
    return batch


def repro_problem(method: str, loader: Any) -> str:
    """Why a loader that is not ``det.pytorch.DataLoader`` is refused."""
    return (
        f"{method}() returned a {type(loader).__module__}.{type(loader).__name__}, not a "
        "det.pytorch.DataLoader: its order cannot be made reproducible, sharded or resumed by "
        "the trainer; return det.pytorch.DataLoader(dataset, batch_size=...), or call "
        "context.experimental.disable_dataset_reproducibility_checks() to take that on yourself"
    )
