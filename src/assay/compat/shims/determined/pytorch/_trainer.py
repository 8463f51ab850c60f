"""``det.pytorch.init()`` and ``det.pytorch.Trainer``: a ``PyTorchTrial`` trained on a
cluster (lengths, validation, checkpoints and stops as the experiment says) or locally."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import random
import sys
from collections.abc import Callable, Iterator
from typing import Any

import torch

import assay.core
from assay.core import DistributedContext

from ._context import PyTorchTrialContext, warn_no_profiles
from ._controller import TrialController
from ._trial import PyTorchTrial
from ._units import Batch, Epoch, TrainUnit

log = logging.getLogger("determined.pytorch")

_LENGTH_UNITS = ("batches", "records", "epochs")


def _searcher_length(config: dict[str, Any]) -> tuple[int, str] | None:
    """``searcher.max_length`` as (value, unit), or None when the config has none."""
    length = (config.get("searcher") or {}).get("max_length")
    if isinstance(length, int) and not isinstance(length, bool):
        return length, "batches"
    if isinstance(length, dict):
        for unit in _LENGTH_UNITS:
            if isinstance(length.get(unit), int):
                return int(length[unit]), unit
    return None


def _period(config: dict[str, Any], key: str, global_batch_size: int | None) -> TrainUnit:
    value = config.get(key) or {}
    for unit in _LENGTH_UNITS:
        if isinstance(value, dict) and isinstance(value.get(unit), int):
            return TrainUnit._from_values(
                **{unit: value[unit]}, global_batch_size=global_batch_size
            )
    return Batch(sys.maxsize)


class Trainer:
    """Trains ``trial`` (made with the context :func:`init` yielded) with :meth:`fit`."""

    _controller: type[TrialController] = TrialController
    """The loop :meth:`fit` runs (DeepSpeed's Trainer runs its own)."""

    def __init__(self, trial: PyTorchTrial, context: PyTorchTrialContext) -> None:
        self._trial = trial
        self._context = context
        self._core = context._core
        self._info = assay.core.get_cluster_info()
        self._local = self._info is None or self._info.trial is None

    def configure_profiler(self, *args: Any, **kwargs: Any) -> None:
        """Deprecated by Determined (``fit(profiling_enabled=True)``); does nothing."""
        log.error("trainer.configure_profiler() has been replaced by fit(profiling_enabled=True)")

    def fit(
        self,
        checkpoint_period: TrainUnit | None = None,
        validation_period: TrainUnit | None = None,
        max_length: TrainUnit | None = None,
        reporting_period: TrainUnit = Batch(100),
        checkpoint_policy: str = "best",
        latest_checkpoint: str | None = None,
        step_zero_validation: bool = False,
        test_mode: bool = False,
        profiling_enabled: bool = False,
    ) -> None:
        """Train to ``max_length`` (``Batch(n)`` or ``Epoch(n)``), validating every
        ``validation_period``, checkpointing every ``checkpoint_period`` and after validations
        as ``checkpoint_policy`` says (``best``, ``all``, ``none``), reporting training metrics
        every ``reporting_period``, from ``latest_checkpoint`` when given. On a cluster a pause,
        a preemption or a searcher's early stop checkpoints and ends the run; without
        ``max_length`` the lengths are the searcher's (``searcher.max_length``)."""
        if profiling_enabled:
            warn_no_profiles("fit(profiling_enabled=True)")
        if checkpoint_policy not in ("best", "all", "none"):
            raise ValueError(
                f"checkpoint_policy must be 'best', 'all' or 'none', got {checkpoint_policy!r}"
            )
        if checkpoint_period is None:
            checkpoint_period = Batch(sys.maxsize)
        if validation_period is None:
            validation_period = Batch(sys.maxsize)
        searcher_unit: str | None = None
        global_batch_size = self._context._global_batch_size
        if self._local:
            if checkpoint_policy == "best":
                log.warning("checkpoint_policy='best' needs a cluster; using 'all' locally")
                checkpoint_policy = "all"
            if max_length is None:
                raise ValueError("fit() needs max_length when training outside a cluster")
            _check_length(max_length)
            smaller_is_better, metric, steps = True, None, 0
        else:
            if test_mode:
                raise ValueError("fit(test_mode=True) is only for training outside a cluster")
            assert self._info is not None and self._info.trial is not None
            config = self._info.trial.config
            searcher = config.get("searcher") or {}
            smaller_is_better = bool(searcher.get("smaller_is_better", True))
            metric = searcher.get("metric")
            steps = int(self._info.trial.steps_completed)
            if latest_checkpoint is None and self._info.latest_checkpoint is not None:
                log.warning(
                    "fit() was not given latest_checkpoint, so this run starts over instead of "
                    "resuming; pass latest_checkpoint=det.get_cluster_info().latest_checkpoint"
                )
                steps = 0
            if latest_checkpoint is None:
                steps = 0
            if max_length is None:
                length = _searcher_length(config)
                if length is None:
                    raise ValueError(
                        "fit(max_length=...) must be given: the experiment's searcher has no "
                        "max_length (with time_metric/max_time, pass the same length to fit())"
                    )
                searcher_unit = length[1]
            else:
                _check_length(max_length)
                _warn_mismatch(searcher, max_length)
        self._controller(
            self._trial,
            self._context,
            max_length=max_length,
            searcher_unit=searcher_unit,
            checkpoint_period=checkpoint_period,
            validation_period=validation_period,
            reporting_period=reporting_period,
            checkpoint_policy=checkpoint_policy,
            smaller_is_better=smaller_is_better,
            searcher_metric=metric,
            latest_checkpoint=latest_checkpoint,
            steps_completed=steps,
            local_training=self._local,
            test_mode=test_mode,
            step_zero_validation=step_zero_validation,
            global_batch_size=global_batch_size,
        ).run()


def _check_length(max_length: TrainUnit) -> None:
    if not isinstance(max_length, Batch | Epoch) or not isinstance(max_length.value, int):
        raise TypeError(
            f"max_length must be det.pytorch.Batch(int) or det.pytorch.Epoch(int), got "
            f"{max_length!r}"
        )


def _warn_mismatch(searcher: dict[str, Any], max_length: TrainUnit) -> None:
    unit, limit = searcher.get("time_metric"), searcher.get("max_time")
    if unit is None or limit is None:
        return
    expected = {"batches": Batch, "epochs": Epoch}.get(str(unit))
    if expected is None:
        log.warning(
            "searcher.time_metric %r is neither 'batches' nor 'epochs'; training to %r",
            unit,
            max_length,
        )
    elif not isinstance(max_length, expected) or max_length.value != limit:
        log.warning(
            "fit(max_length=%r) does not match searcher.max_time %s %s: the search may stop "
            "trials at unexpected points",
            max_length,
            limit,
            unit,
        )


def _distributed() -> DistributedContext | None:
    """The ranks a launcher started, with ``torch.distributed`` set up among them (NCCL on
    GPUs, gloo otherwise); None for a trial of one process."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        info = assay.core.get_cluster_info()
        if info is not None and (len(info.slot_ids) > 1 or len(info.container_addrs) > 1):
            raise RuntimeError(
                "a PyTorchTrial on several slots must be started by a launcher: use "
                "entrypoint: python3 -m determined.launch.torch_distributed python3 SCRIPT"
            )
        return None
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if torch.cuda.is_available() else "gloo")
    return DistributedContext.from_torch_distributed()


@dataclasses.dataclass(frozen=True)
class TrialStart:
    """What a Trial API's ``init()`` trains with: on a cluster, the trial's; locally, what was
    passed."""

    hparams: dict[str, Any] | None
    exp_conf: dict[str, Any] | None
    distributed: DistributedContext | None
    trial_seed: int | None = None
    steps: int = 0


def trial_start(
    hparams: dict[str, Any] | None,
    exp_conf: dict[str, Any] | None,
    distributed: DistributedContext | None,
    ranks: Callable[[], DistributedContext | None] | None = None,
) -> tuple[assay.core.ClusterInfo | None, TrialStart]:
    """The cluster info, and what ``init()`` trains with: on a cluster the trial's config,
    hyperparameters (unless given), seed, steps done and ranks (``ranks()``: by default the
    launcher's processes, with ``torch.distributed`` set up among them); locally, what was
    passed."""
    info = assay.core.get_cluster_info()
    if info is None or info.trial is None:
        return info, TrialStart(hparams, exp_conf, distributed)
    trial = info.trial
    return info, TrialStart(
        hparams=trial.hparams if hparams is None else hparams,
        exp_conf=trial.config,
        distributed=(ranks or _distributed)(),
        trial_seed=trial.trial_seed,
        steps=trial.steps_completed,
    )


def _seed(seed: int) -> None:
    random.seed(seed)
    torch.random.manual_seed(seed)
    with contextlib.suppress(ImportError):
        import numpy as np

        np.random.seed(seed)


@contextlib.contextmanager
def init(
    *,
    hparams: dict[str, Any] | None = None,
    exp_conf: dict[str, Any] | None = None,
    distributed: DistributedContext | None = None,
    aggregation_frequency: int = 1,
    enable_tensorboard_logging: bool = True,
) -> Iterator[PyTorchTrialContext]:
    """The context a ``PyTorchTrial`` is made with; train inside this ``with`` block. On a
    cluster the hyperparameters, config and seed are the trial's; locally, what is passed."""
    info, given = trial_start(hparams, exp_conf, distributed)
    hparams, exp_conf, distributed = given.hparams, given.exp_conf, given.distributed
    trial_seed, steps = given.trial_seed, given.steps
    if trial_seed is not None:
        _seed(trial_seed)
        optimizations = (exp_conf or {}).get("optimizations") or {}
        aggregation_frequency = int(
            optimizations.get("aggregation_frequency", aggregation_frequency) or 1
        )
    with assay.core.init(
        distributed=distributed or DistributedContext(),
        preempt_mode=assay.core.PreemptMode.WorkersAskChief,
    ) as core_context:
        yield PyTorchTrialContext(
            core_context=core_context,
            trial_seed=trial_seed,
            hparams=hparams,
            slots_per_trial=core_context.distributed.size,
            num_gpus=len(info.gpu_uuids) if info is not None else torch.cuda.device_count(),
            exp_conf=exp_conf,
            aggregation_frequency=aggregation_frequency,
            steps_completed=steps,
            managed_training=True,
            debug_enabled=bool(exp_conf and exp_conf.get("debug")),
            enable_tensorboard_logging=enable_tensorboard_logging,
        )
