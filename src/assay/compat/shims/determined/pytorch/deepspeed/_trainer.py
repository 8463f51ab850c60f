"""``det.pytorch.deepspeed.init()`` and ``Trainer``: a ``DeepSpeedTrial`` trained on a
cluster (lengths, validation, checkpoints and stops as the experiment says) or locally."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any, cast

import deepspeed  # type: ignore[import-untyped]
import torch

import assay.core
from assay.core import DistributedContext
from assay.ports import free_port

from .._trainer import Trainer as PyTorchTrainer
from .._trainer import _seed, trial_start
from ._context import DeepSpeedTrialContext
from ._controller import DeepSpeedTrialController
from ._trial import DeepSpeedTrial

MANUAL_INIT = "DET_MANUAL_INIT_DISTRIBUTED"
"""Set, the trial calls ``deepspeed.init_distributed`` itself (Determined's switch)."""


class Trainer(PyTorchTrainer):
    """Trains ``trial`` (made with the context :func:`init` yielded) with :meth:`fit`, which
    takes ``det.pytorch.Trainer.fit``'s arguments."""

    _controller = DeepSpeedTrialController

    def __init__(self, trial: DeepSpeedTrial, context: DeepSpeedTrialContext) -> None:
        super().__init__(cast(Any, trial), context)


def _init_torch_distributed() -> None:
    """``torch.distributed`` set up as DeepSpeed's engines need it. A launcher (torchrun,
    ``determined.launch.deepspeed`` or ``torch_distributed``) said where the ranks meet; a
    process of its own is a group of one on loopback, instead of the MPI discovery DeepSpeed
    would otherwise try."""
    if os.environ.get(MANUAL_INIT) or torch.distributed.is_initialized():
        return
    if int(os.environ.get("WORLD_SIZE") or 1) <= 1:
        for name, value in (
            ("RANK", "0"),
            ("LOCAL_RANK", "0"),
            ("WORLD_SIZE", "1"),
            ("LOCAL_WORLD_SIZE", "1"),
            ("MASTER_ADDR", "127.0.0.1"),
            ("MASTER_PORT", str(free_port())),
        ):
            os.environ.setdefault(name, value)
    deepspeed.init_distributed(auto_mpi_discovery=False)


def _distributed() -> DistributedContext | None:
    """The ranks a launcher started (None for one process), on a cluster."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        info = assay.core.get_cluster_info()
        if info is not None and (len(info.slot_ids) > 1 or len(info.container_addrs) > 1):
            raise RuntimeError(
                "a DeepSpeedTrial on several slots must be started by a launcher: use "
                "entrypoint: python3 -m determined.launch.deepspeed python3 SCRIPT"
            )
        return None
    return DistributedContext.from_torch_distributed()


@contextlib.contextmanager
def init(
    *,
    hparams: dict[str, Any] | None = None,
    exp_conf: dict[str, Any] | None = None,
    distributed: DistributedContext | None = None,
    enable_tensorboard_logging: bool = True,
) -> Iterator[DeepSpeedTrialContext]:
    """The context a ``DeepSpeedTrial`` is made with; train inside this ``with`` block. On a
    cluster the hyperparameters, config and seed are the trial's; locally, what is passed.
    ``torch.distributed`` is set up here (unless ``DET_MANUAL_INIT_DISTRIBUTED`` is set)."""
    info, given = trial_start(hparams, exp_conf, distributed, ranks=_distributed)
    hparams, exp_conf, distributed = given.hparams, given.exp_conf, given.distributed
    trial_seed, steps = given.trial_seed, given.steps
    _init_torch_distributed()
    if distributed is None and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        # Run locally by a launcher: its ranks are the trial's.
        distributed = DistributedContext.from_torch_distributed()
    if trial_seed is not None:
        _seed(trial_seed)
    with assay.core.init(
        distributed=distributed or DistributedContext(),
        preempt_mode=assay.core.PreemptMode.WorkersAskChief,
    ) as core_context:
        yield DeepSpeedTrialContext(
            core_context=core_context,
            trial_seed=trial_seed,
            hparams=hparams,
            slots_per_trial=core_context.distributed.size,
            num_gpus=len(info.gpu_uuids) if info is not None else torch.cuda.device_count(),
            exp_conf=exp_conf,
            steps_completed=steps,
            enable_tensorboard_logging=enable_tensorboard_logging,
        )
