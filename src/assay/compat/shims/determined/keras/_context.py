"""``det.keras.TFKerasTrialContext``: what a ``TFKerasTrial`` wraps its model, optimizers and
datasets with, and asks about its hyperparameters, batch sizes and config."""

from __future__ import annotations

import inspect
import logging
import pathlib
from typing import Any, NamedTuple

import tensorflow as tf

from assay.core import Context as CoreContext

from ._trial_errors import InvalidExperimentException

log = logging.getLogger("determined.keras")


class TFKerasTrainConfig(NamedTuple):
    training_data: Any
    validation_data: Any
    callbacks: list[Any]


class _ArgNotProvided:
    """Tells an argument left out from one given as None."""


_NOT_PROVIDED = _ArgNotProvided()


def batch_sizes(hparams: dict[str, Any], slots: int) -> tuple[int, int]:
    """(per-slot, global) batch size from ``hparams['global_batch_size']``, which a
    ``TFKerasTrial`` must have."""
    if hparams.get("global_batch_size") is None:
        raise InvalidExperimentException(
            "a TFKerasTrial needs hyperparameters.global_batch_size in the experiment config"
        )
    global_size = int(hparams["global_batch_size"])
    per_slot = global_size // max(slots, 1)
    if per_slot < 1:
        raise InvalidExperimentException(
            f"hyperparameters.global_batch_size ({global_size}) is smaller than the trial's "
            f"{slots} slots"
        )
    return per_slot, per_slot * slots


class TFKerasExperimentalContext:
    """``context.experimental``: Determined's removed dataset caching, refused as it refused."""

    def cache_train_dataset(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            "cache_train_dataset was removed in Determined 0.18.0: use yogadl directly"
        )

    def cache_validation_dataset(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            "cache_validation_dataset was removed in Determined 0.18.0: use yogadl directly"
        )


class TFKerasTrialContext:
    """Made by the harness (or by ``load_model_from_checkpoint_path``) and passed to the
    trial's ``__init__``."""

    def __init__(
        self,
        core_context: CoreContext,
        *,
        hparams: dict[str, Any],
        exp_conf: dict[str, Any],
        trial_seed: int,
        steps_completed: int,
        managed_training: bool,
    ) -> None:
        self._core = core_context
        self.distributed = core_context.distributed
        self._hparams = hparams
        self._exp_conf = exp_conf
        self._trial_seed = trial_seed
        self._steps_completed = steps_completed
        self._managed_training = managed_training
        self._per_slot_batch_size, self._global_batch_size = batch_sizes(
            hparams, self.distributed.size
        )
        self.experimental = TFKerasExperimentalContext()
        self.dataset_initialized = False
        self.model: Any = None
        self.compile_args: inspect.BoundArguments | None = None
        self.train_config: TFKerasTrainConfig | None = None
        self._stop_requested = False
        self._optimizers: list[Any] = []
        self._wrapped_optimizers: list[Any] = []
        self._compiled_optimizer: Any = None
        # configure_fit()'s settings; the defaults are those of keras.Model.fit().
        self._fit_verbose = True
        self._fit_class_weight: Any = None
        self._fit_shuffle = True
        self._fit_validation_steps: int | None = None

    # -- what the trial is --------------------------------------------------------------------

    def get_hparams(self) -> dict[str, Any]:
        return self._hparams

    def get_hparam(self, name: str) -> Any:
        if name not in self._hparams:
            raise ValueError(
                f"no hyperparameter {name!r}; this trial has {sorted(self._hparams)} (check the "
                "experiment config's hyperparameters)"
            )
        return self._hparams[name]

    def get_experiment_config(self) -> dict[str, Any]:
        return self._exp_conf

    def get_data_config(self) -> dict[str, Any]:
        return dict(self._exp_conf.get("data") or {})

    def get_experiment_id(self) -> int:
        info = self._core.info
        return int(info.trial.experiment_id) if info and info.trial else 0

    def get_trial_id(self) -> int:
        info = self._core.info
        return int(info.trial.trial_id) if info and info.trial else 0

    def get_trial_seed(self) -> int:
        return self._trial_seed

    def get_initial_batch(self) -> int:
        """The batch training starts from (the checkpoint's steps on a resume)."""
        return self._steps_completed

    def get_global_batch_size(self) -> int:
        return self._global_batch_size

    def get_per_slot_batch_size(self) -> int:
        """The global batch size divided by the trial's slots."""
        return self._per_slot_batch_size

    def get_stop_requested(self) -> bool:
        return self._stop_requested

    def set_stop_requested(self, stop_requested: bool) -> None:
        """Ask the trial to checkpoint and end after the current workload."""
        self._stop_requested = bool(stop_requested)

    def get_tensorboard_path(self) -> pathlib.Path:
        return self._core.train.get_tensorboard_path()

    # -- what fit() is told -------------------------------------------------------------------

    def configure_fit(
        self,
        verbose: bool | None = None,
        class_weight: Any = _NOT_PROVIDED,
        workers: int | None = None,
        use_multiprocessing: bool | None = None,
        max_queue_size: int | None = None,
        shuffle: bool | None = None,
        validation_steps: Any = _NOT_PROVIDED,
    ) -> None:
        """Set ``model.fit()``'s arguments; a later call changes only those it passes.
        ``shuffle`` shuffles a Sequence's batches (from the trial seed, so a resumed trial
        sees the same order); ``validation_steps`` limits a ``tf.data`` validation set.
        ``workers``, ``use_multiprocessing`` and ``max_queue_size`` are accepted: batches are
        read by tf.data's prefetching instead of Keras 2's worker pool."""
        if verbose is not None:
            self._fit_verbose = bool(verbose)
        if not isinstance(class_weight, _ArgNotProvided):
            self._fit_class_weight = class_weight
        pool = {
            "workers": workers,
            "use_multiprocessing": use_multiprocessing,
            "max_queue_size": max_queue_size,
        }
        given = [name for name, value in pool.items() if value is not None]
        if given:
            # Keras 3's fit() has no worker pool to size; say so rather than pass in silence.
            log.warning(
                "configure_fit(%s): no effect here, as batches are read by tf.data's "
                "prefetching (Keras 3 has no worker pool)",
                ", ".join(given),
            )
        if shuffle is not None:
            self._fit_shuffle = bool(shuffle)
        if not isinstance(validation_steps, _ArgNotProvided):
            self._fit_validation_steps = validation_steps

    # -- wrapping -----------------------------------------------------------------------------

    def wrap_model(self, model: Any) -> Any:
        """Call on the model before compiling it: its ``compile()`` is recorded and replayed
        by the harness once the optimizers are known."""
        if not self._managed_training:
            return model
        compile_method = model.compile

        def recorded_compile(*args: Any, **kwargs: Any) -> None:
            bound = inspect.signature(compile_method).bind(*args, **kwargs)
            bound.apply_defaults()
            self.compile_args = bound

        # Set past Keras's attribute tracking: a method on this one instance.
        object.__setattr__(model, "compile", recorded_compile)
        self.model = model
        return model

    def wrap_optimizer(self, optimizer: Any) -> Any:
        """Call on each optimizer (its state is saved in checkpoints)."""
        if not self._managed_training:
            return optimizer
        self._wrapped_optimizers.append(optimizer)
        return optimizer

    def wrap_dataset(self, dataset: Any, shard_dataset: bool = True) -> Any:
        """Call on each ``tf.data.Dataset`` as soon as it is made. A trial has one slot here,
        so nothing is sharded."""
        del shard_dataset
        if not self._managed_training:
            return dataset
        self.dataset_initialized = True
        return dataset

    # -- the harness's ------------------------------------------------------------------------

    def _compile(self) -> None:
        """Compile the wrapped model with what its ``compile()`` was given."""
        model = self.model
        if model is None:
            raise InvalidExperimentException(
                "build_model() must wrap its model: model = self.context.wrap_model(model)"
            )
        if self.compile_args is None:
            raise InvalidExperimentException(
                "build_model() must compile its model: call model.compile(...) before returning it"
            )
        model.__dict__.pop("compile", None)
        self._compiled_optimizer = self.compile_args.arguments.get("optimizer")
        model.compile(*self.compile_args.args, **self.compile_args.kwargs)

    def _select_optimizers(self) -> None:
        """The optimizers a checkpoint keeps: those wrapped, else the compiled one."""
        if self._wrapped_optimizers:
            self._optimizers = list(self._wrapped_optimizers)
            return
        compiled = getattr(self.model, "optimizer", None)
        if compiled is None:
            raise InvalidExperimentException(
                "the model has no optimizer: pass optimizer=self.context.wrap_optimizer(...) to "
                "model.compile()"
            )
        log.info("wrap the optimizer with optimizer = self.context.wrap_optimizer(optimizer)")
        self._optimizers = [compiled]

    def _check_dataset(self, data: Any) -> None:
        if isinstance(data, tf.data.Dataset) and not self.dataset_initialized:
            raise InvalidExperimentException(
                "wrap each tf.data.Dataset with context.wrap_dataset(dataset) in the data loader"
            )
