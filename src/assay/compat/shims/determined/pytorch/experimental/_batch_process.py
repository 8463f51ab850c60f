"""``det.pytorch.experimental.torch_batch_process``: Determined's batch inference. A dataset is
cut into batches, the batches are shared among the trial's ranks, and a ``TorchBatchProcessor``
of the user's is called on each; progress is checkpointed every ``checkpoint_interval``
batches, so a paused, preempted or restarted trial goes on after the last batch it recorded.

One difference from Determined: ``report_task_using_checkpoint`` and
``report_task_using_model_version`` are refused, as assay does not link a task's metrics to a
checkpoint or a model version.
"""

from __future__ import annotations

import abc
import contextlib
import json
import logging
import math
import tempfile
import uuid
from collections.abc import Iterator, Sized
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils import data

import assay.core
from assay.core import DistributedContext

from .._data import DataLoader, to_device
from .._reducer import ReducerContext
from .._trainer import _distributed

log = logging.getLogger("determined.pytorch")

DEFAULT_BATCH_SIZE = 1
STATE_FILE = "batch_completed.json"
"""What a checkpoint of progress holds (Determined's name), beside ``metadata.json``."""


class TorchBatchProcessorContext(ReducerContext):
    """What a :class:`TorchBatchProcessor` is made with: the device, reducers, storage for its
    outputs, and metrics."""

    def __init__(self, core_context: assay.core.Context, storage_path: str) -> None:
        super().__init__(core_context.distributed.allgather)
        self._core_context = core_context
        self.device = get_default_device(core_context)
        self._storage_path = storage_path
        self._use_default_storage = False

    def get_hparams(self) -> dict[str, Any]:
        info = assay.core.get_cluster_info()
        if info is None or info.trial is None:
            raise RuntimeError("get_hparams() needs a trial on a cluster: it has no hparams here")
        return dict(info.trial.hparams)

    def to_device(self, batch: Any, warned_types: set[type] | None = None) -> Any:
        """``batch`` (tensors, arrays, and dicts, lists or tuples of them) on this rank's
        device."""
        return to_device(batch, self.device, warned_types)

    def get_tensorboard_path(self) -> Path:
        """Where TensorBoard files go to be shown with the trial's (a profiler's traces, say)."""
        return self._core_context.train.get_tensorboard_path()

    def prepare_model_for_inference(self, model: nn.Module) -> nn.Module:
        """``model`` in eval mode, on this rank's device."""
        model.eval()
        model.to(self.device)
        return model

    @contextlib.contextmanager
    def upload_path(self) -> Iterator[Path]:
        """A local directory whose files are stored on exit in the trial's checkpoint storage
        under ``<output uuid>/rank_<N>/`` (the same uuid across restarts of the trial; a file
        stored again under the same name is replaced)."""
        storage = self._core_context.checkpoint.storage
        put_file = getattr(storage, "put_file", None)  # a storage that keeps keyed files
        if put_file is None:
            raise RuntimeError(
                f"upload_path(): {type(storage).__name__} checkpoint storage keeps no loose "
                "files; use shared_fs, s3, gcs or azure storage"
            )
        self._use_default_storage = True
        with tempfile.TemporaryDirectory(prefix="upload-") as tmp:
            yield Path(tmp)
            for path in sorted(Path(tmp).rglob("*")):
                if path.is_file():
                    key = f"{self._storage_path}/{path.relative_to(tmp).as_posix()}"
                    put_file(path, key)

    def report_metrics(self, group: str, steps_completed: int, metrics: dict[str, Any]) -> None:
        """Report ``metrics`` of ``group`` ("training", "validation" or one's own) at
        ``steps_completed``."""
        self._core_context.train.report_metrics(group, steps_completed, metrics)

    def report_task_using_model_version(self, model_version: Any) -> None:
        raise NotImplementedError(
            "report_task_using_model_version(): assay does not link a task's metrics to a model "
            "version; report them with context.report_metrics() and find them by trial"
        )

    def report_task_using_checkpoint(self, checkpoint: Any) -> None:
        raise NotImplementedError(
            "report_task_using_checkpoint(): assay does not link a task's metrics to a "
            "checkpoint; report them with context.report_metrics() and find them by trial"
        )

    def get_distributed_rank(self) -> int:
        return self._core_context.distributed.rank

    def get_distributed_size(self) -> int:
        return self._core_context.distributed.size


def get_default_device(core_context: assay.core.Context) -> torch.device:
    """This rank's GPU where the node has GPUs (one per local rank), else the CPU."""
    if torch.cuda.device_count() == 0:
        return torch.device("cpu")
    return torch.device("cuda", core_context.distributed.local_rank)


class TorchBatchProcessor(metaclass=abc.ABCMeta):
    """Subclass it: ``__init__(context)`` prepares what the batches need (a model, say) and
    ``process_batch`` handles one batch."""

    @abc.abstractmethod
    def __init__(self, context: TorchBatchProcessorContext) -> None: ...

    @abc.abstractmethod
    def process_batch(self, batch: Any, batch_idx: int) -> None:
        """Handle ``batch``; ``batch_idx`` counts this rank's batches (with 4 ranks and 8
        batches, each rank sees indices 0 and 1)."""

    def on_checkpoint_start(self) -> None:  # noqa: B027 - a hook; doing nothing is its default
        """Called before each checkpoint of progress (flush buffered outputs here)."""

    def on_finish(self) -> None:  # noqa: B027 - a hook; doing nothing is its default
        """Called once every batch was processed."""


def _check_arguments(
    checkpoint_interval: int, dataloader_kwargs: dict[str, Any], batch_size: int | None
) -> None:
    if checkpoint_interval <= 0:
        raise ValueError(
            f"checkpoint_interval must be a positive number of batches, got {checkpoint_interval}"
        )
    if dataloader_kwargs.get("shuffle"):
        raise ValueError(
            "dataloader_kwargs: shuffle must be False: the batches are shared among the ranks "
            "and resumed by index"
        )
    for key in ("sampler", "batch_sampler"):
        if key in dataloader_kwargs:
            raise ValueError(
                f"dataloader_kwargs: remove {key!r}: torch_batch_process makes the sampler that "
                "shares the batches among the ranks"
            )
    if batch_size is not None and "batch_size" in dataloader_kwargs:
        raise ValueError(
            "batch_size is given twice, to torch_batch_process and in dataloader_kwargs; give it "
            "once"
        )


def _iterations(max_batches: int | None, per_rank: int) -> int:
    """How many batches each rank iterates: ``max_batches`` where it is a positive number no
    larger than its share, else the whole share (as Determined, with a warning)."""
    if max_batches is None:
        return per_rank
    if max_batches <= 0 or max_batches > per_rank:
        log.warning(
            "max_batches=%s is not between 1 and this rank's %s batches: processing them all",
            max_batches,
            per_rank,
        )
        return per_rank
    return max_batches


def _checkpoint(core_context: assay.core.Context, steps_completed: int, output_uuid: str) -> None:
    """Record the batches every rank has done (the fewest of them), from the chief."""
    done = core_context.distributed.gather(steps_completed)
    if done is None:
        return
    fewest = min(done)
    metadata = {"steps_completed": fewest, "default_output_uuid": output_uuid}
    with core_context.checkpoint.store_path(metadata) as (path, _):
        (path / STATE_FILE).write_text(json.dumps({"batch_completed": fewest}))
        (path / "metadata.json").write_text(json.dumps(metadata))


def _report_reduced(
    context: TorchBatchProcessorContext, core_context: assay.core.Context, steps: int
) -> None:
    metrics = context.reduce_metrics(for_training=False)
    if metrics and core_context.distributed.rank == 0:
        core_context.train.report_validation_metrics(steps, metrics)


def torch_batch_process(
    batch_processor_cls: type[TorchBatchProcessor],
    dataset: data.Dataset[Any],
    batch_size: int | None = None,
    max_batches: int | None = None,
    checkpoint_interval: int = 5,
    dataloader_kwargs: dict[str, Any] | None = None,
    distributed_context: DistributedContext | None = None,
) -> None:
    """Process ``dataset`` in batches with ``batch_processor_cls`` on every rank of the trial,
    each rank taking every N-th batch, recording progress every ``checkpoint_interval`` batches
    and stopping there when the trial is paused or preempted."""
    kwargs = dict(dataloader_kwargs or {})
    _check_arguments(checkpoint_interval, kwargs, batch_size)
    if batch_size is None:
        batch_size = int(kwargs.pop("batch_size", DEFAULT_BATCH_SIZE))
    if not isinstance(dataset, Sized):
        raise TypeError("torch_batch_process needs a dataset with __len__() (a map-style one)")
    info = assay.core.get_cluster_info()
    if info is None or info.trial is None:
        raise RuntimeError(
            "torch_batch_process runs in a trial on a cluster only (its progress is kept in the "
            "trial's checkpoints)"
        )
    distributed = distributed_context or _distributed() or DistributedContext()
    with assay.core.init(
        distributed=distributed, preempt_mode=assay.core.PreemptMode.WorkersAskChief
    ) as core_context:
        dist = core_context.distributed
        rank, ranks = dist.rank, dist.size
        output_uuid = str(dist.broadcast(str(uuid.uuid4()) if rank == 0 else None))
        skip = 0
        if info.latest_checkpoint is not None:
            with core_context.checkpoint.restore_path(info.latest_checkpoint) as path:
                metadata = json.loads((path / "metadata.json").read_text())
            skip = int(metadata["steps_completed"])
            output_uuid = str(metadata["default_output_uuid"])
            log.info("resuming batch processing after batch %s", skip)
        context = TorchBatchProcessorContext(core_context, f"{output_uuid}/rank_{rank}")
        processor = batch_processor_cls(context=context)  # type: ignore[call-arg]
        loader = DataLoader(dataset, batch_size=batch_size, shuffle=False, **kwargs)
        batches = iter(loader.get_data_loader(skip=skip, num_replicas=ranks, rank=rank))
        # Every rank iterates as often as the one with the most batches, so that none waits
        # at a checkpoint for a rank that has already run out.
        length = _iterations(max_batches, math.ceil(len(dataset) / batch_size / ranks))
        steps = last_checkpoint = skip
        for batch_idx in range(skip, length):
            batch = next(batches, None)
            if batch is not None:
                processor.process_batch(batch=batch, batch_idx=batch_idx)
            steps = batch_idx + 1
            if steps % checkpoint_interval:
                continue
            processor.on_checkpoint_start()
            _checkpoint(core_context, steps, output_uuid)
            last_checkpoint = steps
            if rank == 0:
                done = min(1.0, steps * ranks * batch_size / max(1, len(dataset)))
                core_context.train.report_progress(done)
            if core_context.preempt.should_preempt():
                _report_reduced(context, core_context, steps)
                return
        if steps > last_checkpoint:
            processor.on_checkpoint_start()
            _checkpoint(core_context, length, output_uuid)
        _report_reduced(context, core_context, steps)
        processor.on_finish()
        if rank == 0 and context._use_default_storage:
            log.info(
                "files stored with upload_path() are in checkpoint storage under %s/rank_<N>/",
                output_uuid,
            )
        dist.gather(None)  # the trial ends when every rank is done
        if rank == 0:
            core_context.train.report_progress(1.0)
