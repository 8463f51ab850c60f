"""``det.pytorch.PyTorchTrialContext``: what a ``PyTorchTrial`` wraps its model, optimizers
and schedulers with, and asks about its hyperparameters, batch sizes and place in training."""

from __future__ import annotations

import contextlib
import logging
import os
import pathlib
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn

from assay.core import Context as CoreContext

from ._data import to_device
from ._experimental import PyTorchExperimentalContext
from ._lr_scheduler import LRScheduler
from ._reducer import ReducerContext

log = logging.getLogger("determined.pytorch")


class InvalidExperimentException(Exception):
    """The trial's code uses the API in a way that cannot work (Determined's name)."""


def batch_sizes(hparams: dict[str, Any] | None, slots: int) -> tuple[int | None, int | None]:
    """(per-slot, global) batch size from ``hparams['global_batch_size']``, else (None, None)."""
    if not hparams or hparams.get("global_batch_size") is None:
        return None, None
    global_size = int(hparams["global_batch_size"])
    per_slot = global_size // max(slots, 1)
    if per_slot < 1:
        raise InvalidExperimentException(
            f"hyperparameters.global_batch_size ({global_size}) is smaller than the trial's "
            f"{slots} slots: each slot needs at least one record per batch"
        )
    if per_slot * slots != global_size:
        log.warning(
            "global_batch_size %d is not divisible by %d slots: each trains %d records a batch "
            "(%d in all)",
            global_size,
            slots,
            per_slot,
            per_slot * slots,
        )
    return per_slot, per_slot * slots


def _device(local_rank: int) -> torch.device:
    if torch.cuda.is_available() and os.environ.get("CUDA_VISIBLE_DEVICES", "x") != "":
        return torch.device("cuda", local_rank % max(torch.cuda.device_count(), 1))
    return torch.device("cpu")


class PyTorchTrialContext(ReducerContext):
    """Made by :func:`determined.pytorch.init` (or for a legacy ``module:Trial`` entrypoint)
    and passed to the trial's ``__init__``."""

    def __init__(
        self,
        core_context: CoreContext,
        trial_seed: int | None,
        hparams: dict[str, Any] | None,
        slots_per_trial: int,
        num_gpus: int,
        exp_conf: dict[str, Any] | None,
        aggregation_frequency: int,
        steps_completed: int,
        managed_training: bool,
        debug_enabled: bool,
        enable_tensorboard_logging: bool = True,
    ) -> None:
        self._core = core_context
        self.distributed = core_context.distributed
        ReducerContext.__init__(self, self.distributed.allgather)
        self._per_slot_batch_size, self._global_batch_size = batch_sizes(hparams, slots_per_trial)
        self._hparams = hparams
        self._num_gpus = num_gpus
        self._exp_conf = exp_conf
        self._trial_seed = trial_seed
        self._steps_completed = steps_completed
        self._managed_training = managed_training
        self._debug_enabled = debug_enabled
        self._aggregation_frequency = max(int(aggregation_frequency), 1)
        self._enable_tensorboard_logging = enable_tensorboard_logging
        self.device = _device(self.distributed.local_rank)
        self.models: list[nn.Module] = []
        self.optimizers: list[torch.optim.Optimizer] = []
        self.lr_schedulers: list[LRScheduler] = []
        self.profiler: Any = None
        self._epoch_len: int | None = None
        self._current_batch_idx: int | None = None
        self._scaler: Any = None
        self._use_apex = False
        self._optimizer_configs: dict[int, dict[str, Any]] = {}
        self._stop_requested = False
        self._is_pre_trainer = False
        self._tensorboard_writer: Any = None
        self._to_device_warned: set[type] = set()
        self.experimental = PyTorchExperimentalContext(self)

    # -- what the trial is --------------------------------------------------------------------

    def get_hparams(self) -> dict[str, Any]:
        if self._hparams is None:
            raise ValueError(
                "this trial has no hyperparameters: pass hparams= to det.pytorch.init() when "
                "training outside a cluster"
            )
        return self._hparams

    def get_hparam(self, name: str) -> Any:
        hparams = self.get_hparams()
        if name not in hparams:
            raise ValueError(
                f"no hyperparameter {name!r}; this trial has {sorted(hparams)} (check the "
                "experiment config's hyperparameters)"
            )
        return hparams[name]

    def get_experiment_config(self) -> dict[str, Any]:
        if self._exp_conf is None:
            raise ValueError(
                "there is no experiment config outside a cluster: pass exp_conf= to "
                "det.pytorch.init()"
            )
        return self._exp_conf

    def get_data_config(self) -> dict[str, Any]:
        return dict(self.get_experiment_config().get("data") or {})

    def get_global_batch_size(self) -> int:
        if self._global_batch_size is None:
            raise ValueError(
                "the global batch size is undefined: set hyperparameters.global_batch_size in "
                "the experiment config (or in det.pytorch.init(hparams=...))"
            )
        return self._global_batch_size

    def get_per_slot_batch_size(self) -> int:
        if self._per_slot_batch_size is None:
            raise ValueError(
                "the per-slot batch size is undefined: set hyperparameters.global_batch_size in "
                "the experiment config (or in det.pytorch.init(hparams=...))"
            )
        return self._per_slot_batch_size

    def get_trial_seed(self) -> int:
        if self._trial_seed is None:
            raise ValueError("this trial has no seed outside a cluster")
        return self._trial_seed

    def get_initial_batch(self) -> int:
        """The batch training starts from (the checkpoint's steps on a resume)."""
        return self._steps_completed

    def get_experiment_id(self) -> int:
        info = self._core.info
        return int(info.trial.experiment_id) if info and info.trial else 0

    def get_trial_id(self) -> int:
        info = self._core.info
        return int(info.trial.trial_id) if info and info.trial else 0

    def get_stop_requested(self) -> bool:
        return self._stop_requested

    def set_stop_requested(self, stop_requested: bool) -> None:
        """Ask the loop to checkpoint and end the trial after this batch."""
        self._stop_requested = bool(stop_requested)

    def get_enable_tensorboard_logging(self) -> bool:
        return self._enable_tensorboard_logging

    def set_enable_tensorboard_logging(self, enable_tensorboard_logging: bool) -> None:
        self._enable_tensorboard_logging = bool(enable_tensorboard_logging)

    def get_tensorboard_path(self) -> pathlib.Path:
        return self._core.train.get_tensorboard_path()

    def get_tensorboard_writer(self) -> Any:
        if self._tensorboard_writer is None:
            from torch.utils.tensorboard import SummaryWriter

            self._tensorboard_writer = SummaryWriter(str(self.get_tensorboard_path()))
        return self._tensorboard_writer

    # -- where training is --------------------------------------------------------------------

    def _batch_idx(self) -> int:
        if self._current_batch_idx is None:
            raise RuntimeError("training has not started: no batch is being trained")
        return self._current_batch_idx

    def _epoch(self) -> int:
        if self._epoch_len is None:
            raise RuntimeError("the training data loader is not built yet")
        return self._epoch_len

    def current_train_batch(self) -> int:
        return self._batch_idx()

    def current_train_epoch(self) -> int:
        return self._batch_idx() // self._epoch()

    def is_epoch_start(self) -> bool:
        return self._batch_idx() % self._epoch() == 0

    def is_epoch_end(self) -> bool:
        return self._batch_idx() % self._epoch() == self._epoch() - 1

    # -- wrapping -----------------------------------------------------------------------------

    def wrap_model(self, model: nn.Module) -> nn.Module:
        """The model on this rank's device; in a distributed trial, in
        ``DistributedDataParallel`` (gradients averaged across the ranks in ``backward``)."""
        if self._use_apex:
            raise InvalidExperimentException("call wrap_model() before configure_apex_amp()")
        wrapped: nn.Module = model
        if self._managed_training:
            wrapped = model.to(self.device)
            if self.distributed.size > 1 and torch.distributed.is_initialized():
                ids = [self.device] if self.device.type == "cuda" else None
                wrapped = nn.parallel.DistributedDataParallel(wrapped, device_ids=ids)
        if self.experimental._auto_amp:
            wrapped = self.autocast_forward_pass(wrapped)
        self.models.append(wrapped)
        return wrapped

    def wrap_optimizer(
        self,
        optimizer: torch.optim.Optimizer,
        backward_passes_per_step: int = 1,
        fp16_compression: bool | None = None,
        average_aggregated_gradients: bool | None = None,
    ) -> torch.optim.Optimizer:
        if self._use_apex:
            raise InvalidExperimentException("call wrap_optimizer() before configure_apex_amp()")
        if backward_passes_per_step < 1:
            raise InvalidExperimentException(
                f"backward_passes_per_step must be at least 1, got {backward_passes_per_step}"
            )
        del fp16_compression  # Horovod's gradient compression: DDP has none to switch
        self._optimizer_configs[id(optimizer)] = {
            "average_aggregated_gradients": True
            if average_aggregated_gradients is None
            else bool(average_aggregated_gradients)
        }
        self.optimizers.append(optimizer)
        return optimizer

    def wrap_lr_scheduler(
        self, lr_scheduler: Any, step_mode: LRScheduler.StepMode, frequency: int = 1
    ) -> LRScheduler:
        if isinstance(lr_scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau) and (
            step_mode is not LRScheduler.StepMode.MANUAL_STEP
        ):
            raise InvalidExperimentException(
                "ReduceLROnPlateau needs a metric to step, so it can only be wrapped with "
                "step_mode=LRScheduler.StepMode.MANUAL_STEP (step it in a callback's "
                "on_validation_end)"
            )
        optimizer = getattr(lr_scheduler, "optimizer", None)
        if optimizer is not None and all(optimizer is not o for o in self.optimizers):
            raise InvalidExperimentException(
                "the LR scheduler's optimizer must be one returned by wrap_optimizer()"
            )
        wrapped = LRScheduler(lr_scheduler, step_mode, frequency)
        self.lr_schedulers.append(wrapped)
        return wrapped

    def wrap_scaler(self, scaler: Any) -> Any:
        """Use this ``GradScaler`` for native mixed precision (pass it to ``step_optimizer``);
        it is saved in checkpoints."""
        if self._use_apex:
            raise InvalidExperimentException("do not mix apex with PyTorch's native AMP")
        if self._scaler is not None:
            raise InvalidExperimentException("call wrap_scaler() or use_amp() only once")
        if self.models:
            raise InvalidExperimentException("call wrap_scaler() before wrap_model()")
        self._scaler = scaler
        return scaler

    def set_profiler(self, *args: Any, **kwargs: Any) -> None:
        """Determined runs ``torch.profiler`` with these arguments during training; assay does
        not, and says so once: training goes on, without the trace."""
        del args, kwargs
        warn_no_profiles("context.set_profiler()")

    def configure_apex_amp(self, models: Any, optimizers: Any, **kwargs: Any) -> Any:
        """NVIDIA apex's AMP: refused where apex is not installed (use ``wrap_scaler`` and
        ``torch.autocast``, PyTorch's own AMP, instead)."""
        import importlib.util

        if importlib.util.find_spec("apex") is None:
            raise InvalidExperimentException(
                "configure_apex_amp() needs NVIDIA apex, which this trial's environment does "
                "not have; use PyTorch's native AMP instead (context.wrap_scaler(GradScaler()) "
                "with torch.autocast, or context.experimental.use_amp())"
            )
        raise InvalidExperimentException(
            "configure_apex_amp() is not supported by assay's determined.pytorch (apex is "
            "unmaintained); use context.wrap_scaler(GradScaler()) with torch.autocast instead"
        )

    def autocast_forward_pass(self, to_wrap: nn.Module) -> nn.Module:
        """``to_wrap`` with its forward pass under ``torch.autocast`` on this device."""
        forward = to_wrap.forward
        device_type = self.device.type

        def autocast_forward(*args: Any, **kwargs: Any) -> Any:
            with torch.autocast(device_type=device_type):
                return forward(*args, **kwargs)

        to_wrap.forward = autocast_forward  # type: ignore[method-assign]
        return to_wrap

    def to_device(self, data: Any) -> Any:
        return to_device(data, self.device, self._to_device_warned)

    # -- stepping -----------------------------------------------------------------------------

    def _should_communicate_and_update(self) -> bool:
        if self._current_batch_idx is None:
            return True
        return (self._current_batch_idx + 1) % self._aggregation_frequency == 0

    @contextlib.contextmanager
    def _no_sync(self) -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            for model in self.models:
                no_sync = getattr(model, "no_sync", None)
                if callable(no_sync):
                    stack.enter_context(no_sync())
            yield

    def backward(
        self,
        loss: torch.Tensor,
        gradient: torch.Tensor | None = None,
        retain_graph: bool = False,
        create_graph: bool = False,
    ) -> None:
        """``loss.backward(...)``; the loss is scaled under ``use_amp()``, and between optimizer
        steps of an aggregation the ranks do not exchange gradients."""
        if self._scaler is not None and self.experimental._auto_amp:
            loss = self._scaler.scale(loss)
        hold = self.distributed.size > 1 and not self._should_communicate_and_update()
        with self._no_sync() if hold else contextlib.nullcontext():
            loss.backward(  # type: ignore[no-untyped-call]
                gradient=gradient, retain_graph=retain_graph, create_graph=create_graph
            )

    def step_optimizer(
        self,
        optimizer: torch.optim.Optimizer,
        clip_grads: Callable[[Any], None] | None = None,
        auto_zero_grads: bool = True,
        scaler: Any = None,
    ) -> None:
        """Step ``optimizer`` (once every ``aggregation_frequency`` batches): gradients averaged
        over the aggregated batches, clipped by ``clip_grads(parameters)``, stepped through the
        scaler under AMP, then zeroed unless ``auto_zero_grads=False``."""
        if self._aggregation_frequency > 1 and not auto_zero_grads:
            raise InvalidExperimentException(
                "auto_zero_grads must be True when optimizations.aggregation_frequency > 1"
            )
        if not self._should_communicate_and_update():
            return
        parameters = [p for group in optimizer.param_groups for p in group.get("params", [])]
        config = self._optimizer_configs.get(id(optimizer), {})
        if config.get("average_aggregated_gradients", True) and self._aggregation_frequency > 1:
            for p in parameters:
                if p.grad is not None:
                    p.grad.data.div_(float(self._aggregation_frequency))
        if scaler is None and self.experimental._auto_amp:
            scaler = self._scaler
        if clip_grads is not None:
            if scaler is not None:
                scaler.unscale_(optimizer)
            clip_grads(parameters)
        if scaler is not None:
            scaler.step(optimizer)
        else:
            optimizer.step()
        if auto_zero_grads:
            optimizer.zero_grad()


def warn_no_profiles(what: str) -> None:
    """Say that profiling asked for with ``what`` does not happen here."""
    log.warning(
        "%s: assay collects no profiles; training goes on without them (use torch.profiler "
        "in the trial for one)",
        what,
    )
