"""``det.pytorch.deepspeed.DeepSpeedTrialContext``: what a ``DeepSpeedTrial`` registers its
model engines with, and ``overwrite_deepspeed_config``."""

from __future__ import annotations

import copy
import json
import logging
import warnings
from typing import Any, NoReturn

import deepspeed  # type: ignore[import-untyped]
import torch
from deepspeed.runtime import config_utils  # type: ignore[import-untyped]

from assay.core import Context as CoreContext

from .._context import InvalidExperimentException, PyTorchTrialContext
from ._mpu import ModelParallelUnit, make_data_parallel_mpu, make_deepspeed_mpu

log = logging.getLogger("determined.pytorch")


def _merge(base: dict[str, Any], source: dict[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in source.items():
        if key in base and isinstance(value, dict) and isinstance(base[key], dict):
            merged[key] = _merge(base[key], value)
        else:
            merged[key] = value
    return merged


def overwrite_deepspeed_config(
    base_ds_config: str | dict[str, Any], source_ds_dict: dict[str, Any]
) -> dict[str, Any]:
    """``base_ds_config`` (a DeepSpeed config file's path, or the dict) with the values of
    ``source_ds_dict`` put in, nested dicts merged key by key; neither input is changed."""
    if isinstance(base_ds_config, str):
        with open(base_ds_config) as f:
            # DeepSpeed's own reader refuses a key given twice: so does this one.
            base = json.load(f, object_pairs_hook=config_utils.dict_raise_error_on_duplicate_keys)
    elif isinstance(base_ds_config, dict):
        base = base_ds_config
    else:
        raise TypeError(
            "overwrite_deepspeed_config() takes a DeepSpeed config file's path or a dict, got "
            f"{type(base_ds_config).__name__}"
        )
    return _merge(base, source_ds_dict)


def _not_for_deepspeed(what: str) -> NoReturn:
    raise InvalidExperimentException(
        f"{what} is not part of DeepSpeedTrialContext: DeepSpeed's engine holds the optimizer "
        "and LR scheduler and steps them; pass them (or the config's) to deepspeed.initialize() "
        "and register the engine with context.wrap_model_engine()"
    )


class DeepSpeedTrialContext(PyTorchTrialContext):
    """Made by :func:`determined.pytorch.deepspeed.init` (or for a legacy ``module:Trial``
    entrypoint) and passed to the trial's ``__init__``. The trial builds its engines with
    ``deepspeed.initialize`` and registers them with :meth:`wrap_model_engine`; the first one's
    micro batch size and gradient accumulation steps set how training is batched."""

    def __init__(
        self,
        core_context: CoreContext,
        trial_seed: int | None,
        hparams: dict[str, Any] | None,
        slots_per_trial: int,
        num_gpus: int,
        exp_conf: dict[str, Any] | None,
        steps_completed: int,
        enable_tensorboard_logging: bool = True,
    ) -> None:
        super().__init__(
            core_context=core_context,
            trial_seed=trial_seed,
            hparams=hparams,
            slots_per_trial=slots_per_trial,
            num_gpus=num_gpus,
            exp_conf=exp_conf,
            aggregation_frequency=1,
            steps_completed=steps_completed,
            managed_training=True,
            debug_enabled=bool(exp_conf and exp_conf.get("debug")),
            enable_tensorboard_logging=enable_tensorboard_logging,
        )
        # train_batch and evaluate_batch get the loader's iterator: moving data is theirs.
        self.experimental._auto_to_device = False
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)
        self.models: list[Any] = []
        self._mpu = make_data_parallel_mpu(self.distributed)
        self._called_set_mpu = False
        self._train_micro_batch_size_per_gpu: int | None = None
        self._num_micro_batches_per_slot: int | None = None
        self._use_pipeline_parallel = False
        self._manual_grad_accumulation = False

    # -- registering ----------------------------------------------------------------------------

    def wrap_model_engine(self, model: Any) -> Any:
        """Register a DeepSpeed engine: it is checkpointed with its own ``save_checkpoint``, and
        the first one's batch geometry (and, for a ``PipelineEngine``, its MPU) is the trial's."""
        model = model.to(self.device)
        if isinstance(model, deepspeed.PipelineEngine):
            self._use_pipeline_parallel = True
            if not self.models:
                self._mpu = make_deepspeed_mpu(model.mpu)
            else:
                log.warning("the MPU of the first wrapped model engine is the trial's")
        if not self.models:
            self._train_micro_batch_size_per_gpu = int(model.train_micro_batch_size_per_gpu())
            self._num_micro_batches_per_slot = int(model.gradient_accumulation_steps())
        elif model.train_micro_batch_size_per_gpu() != self._train_micro_batch_size_per_gpu:
            log.warning(
                "model engine %d's train micro batch size differs from the first engine's; "
                "records are counted by the first",
                len(self.models) + 1,
            )
        self.models.append(model)
        return model

    def set_mpu(self, mpu: ModelParallelUnit) -> None:
        """Use ``mpu`` (for model parallelism outside DeepSpeed's pipeline engine); call it once,
        after :meth:`wrap_model_engine`."""
        if not self.models:
            raise InvalidExperimentException("call wrap_model_engine() before set_mpu()")
        if self._called_set_mpu:
            raise InvalidExperimentException("set_mpu() can be called only once")
        self._called_set_mpu = True
        self._mpu = mpu

    def disable_auto_grad_accumulation(self) -> None:
        """Call ``train_batch`` once per batch instead of once per micro batch: it then trains
        all of ``gradient_accumulation_steps`` micro batches itself."""
        self._manual_grad_accumulation = True

    def disable_dataset_reproducibility_checks(self) -> None:
        """Let the data loader builders return any ``torch.utils.data.DataLoader`` (a training
        one must repeat forever); its order, sharding and resumption are the trial's."""
        self.experimental.disable_dataset_reproducibility_checks()

    # -- asking -----------------------------------------------------------------------------------

    @property
    def use_pipeline_parallel(self) -> bool:
        return self._use_pipeline_parallel

    def get_train_micro_batch_size_per_gpu(self) -> int:
        if self._train_micro_batch_size_per_gpu is None:
            raise InvalidExperimentException(
                "call wrap_model_engine() before asking for the train micro batch size"
            )
        return self._train_micro_batch_size_per_gpu

    def get_num_micro_batches_per_slot(self) -> int:
        if self._num_micro_batches_per_slot is None:
            raise InvalidExperimentException(
                "call wrap_model_engine() before asking for the number of micro batches"
            )
        return self._num_micro_batches_per_slot

    @property
    def train_micro_batch_size_per_gpu(self) -> int:
        """Deprecated by Determined 0.38.0: :meth:`get_train_micro_batch_size_per_gpu`."""
        warnings.warn(
            "DeepSpeedTrialContext.train_micro_batch_size_per_gpu is deprecated: use "
            "get_train_micro_batch_size_per_gpu()",
            FutureWarning,
            stacklevel=2,
        )
        return self.get_train_micro_batch_size_per_gpu()

    @property
    def num_micro_batches_per_slot(self) -> int:
        """Deprecated by Determined 0.38.0: :meth:`get_num_micro_batches_per_slot`."""
        warnings.warn(
            "DeepSpeedTrialContext.num_micro_batches_per_slot is deprecated: use "
            "get_num_micro_batches_per_slot()",
            FutureWarning,
            stacklevel=2,
        )
        return self.get_num_micro_batches_per_slot()

    # -- what PyTorchTrial's context has and DeepSpeed's engine does instead ---------------------

    def wrap_model(self, model: torch.nn.Module) -> torch.nn.Module:
        _not_for_deepspeed("wrap_model()")

    def wrap_optimizer(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        _not_for_deepspeed("wrap_optimizer()")

    def wrap_lr_scheduler(self, lr_scheduler: Any, *args: Any, **kwargs: Any) -> Any:
        _not_for_deepspeed("wrap_lr_scheduler()")

    def wrap_scaler(self, scaler: Any) -> Any:
        _not_for_deepspeed("wrap_scaler() (set fp16 or bf16 in the DeepSpeed config)")

    def backward(self, loss: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        _not_for_deepspeed("context.backward() (call model_engine.backward(loss))")

    def step_optimizer(self, optimizer: Any, *args: Any, **kwargs: Any) -> None:
        _not_for_deepspeed("context.step_optimizer() (call model_engine.step())")
