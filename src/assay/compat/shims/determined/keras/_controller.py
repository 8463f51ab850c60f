"""The training loop of a ``TFKerasTrial``, as Determined 0.38 ran it: one ``model.fit()``
whose callbacks drive the experiment's workloads (train at most ``scheduling_unit`` batches,
validate every ``min_validation_period``, checkpoint every ``min_checkpoint_period`` and as
``checkpoint_policy`` says, to each length the searcher asks for), stopping when the master
asks. All periods are counted in batches (epochs through ``records_per_epoch``).

Training metrics of a workload are what Keras reports after its last batch: the running
averages since the workload began. Validation metrics are ``model.evaluate()``'s, prefixed
``val_``. A Sequence or arrays resume at the exact batch after a pause; a ``tf.data`` dataset
restarts from its beginning (as in Determined).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import pickle
import sys
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from assay.core import EarlyExitReason, InvalidHP, SearcherOperation

from .. import __version__
from . import _data, _rng
from . import callbacks as det_callbacks
from ._context import TFKerasTrainConfig, TFKerasTrialContext
from ._trial import TFKerasTrial
from ._trial_checkpoint import load_checkpoint, save_checkpoint
from ._trial_errors import InvalidExperimentException

log = logging.getLogger("determined.keras")

_UNITS = ("batches", "records", "epochs")


class ShouldExit(Exception):
    """Ends the workloads from inside them (a preemption, a stop the trial asked for)."""

    def __init__(self, skip_exit_checkpoint: bool = False) -> None:
        super().__init__()
        self.skip_exit_checkpoint = skip_exit_checkpoint


class _TrainingFinished(Exception):
    """Leaves ``model.fit()``, which is given more batches than any trial trains."""


class SequencerState:
    """What a checkpoint keeps of the loop (``workload_sequencer.pkl``, Determined's fields)."""

    def __init__(
        self,
        trial_id: int,
        last_ckpt: int = 0,
        steps_completed: int = 0,
        step_id: int = 0,
        last_val: int = 0,
    ) -> None:
        self.trial_id = trial_id
        self.last_ckpt = last_ckpt
        self.steps_completed = steps_completed
        self.step_id = step_id
        self.last_val = last_val


def _length_of(value: Any) -> tuple[str, int] | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return "batches", value
    if isinstance(value, dict):
        for unit in _UNITS:
            if isinstance(value.get(unit), int):
                return unit, int(value[unit])
    return None


class _Multiplexer(det_callbacks._MultiplexerBase):
    """The multiplexer whose Keras calls drive the controller's workloads."""

    def __init__(self, controller: TFKerasTrialController, *args: Any) -> None:
        super().__init__(*args)
        self.controller = controller

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        # fit() has built the model by now: a subclassed model gets its weights here.
        self.controller._restore_weights()
        super().on_train_begin(logs)
        self.controller._advance(None)

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        super().on_train_batch_end(batch, logs)
        self.controller._batch_trained(dict(logs or {}))


class TFKerasTrialController:
    """Trains one ``TFKerasTrial`` on a cluster, from its latest checkpoint if it has one."""

    def __init__(
        self,
        trial: TFKerasTrial,
        context: TFKerasTrialContext,
        train_config: TFKerasTrainConfig,
        latest_checkpoint: str | None,
    ) -> None:
        self.trial = trial
        self.context = context
        self.core = context._core
        self.model = context.model
        self.chief = context.distributed.rank == 0
        config = context.get_experiment_config()
        self._periods(config)
        context._select_optimizers()
        self.training_data = train_config.training_data
        self.validation_data = train_config.validation_data
        if isinstance(self.training_data, _data.SequenceAdapter):
            context.configure_fit(
                workers=self.training_data.workers,
                use_multiprocessing=self.training_data.use_multiprocessing,
                max_queue_size=self.training_data.max_queue_size,
            )
            self.training_data = self.training_data.sequence
        if isinstance(self.validation_data, _data.SequenceAdapter):
            self.validation_data = self.validation_data.sequence
        context._check_dataset(self.training_data)
        context._check_dataset(self.validation_data)
        self.state = SequencerState(trial_id=context.get_trial_id())
        self._stack = contextlib.ExitStack()
        self._restore_from: Path | None = None
        callbacks_state: dict[str, Any] | None = None
        if latest_checkpoint is not None:
            log.info("restoring the trial from checkpoint %s", latest_checkpoint)
            path = self._stack.enter_context(self.core.checkpoint.restore_path(latest_checkpoint))
            callbacks_state = self._load_state(path)
            self._restore_from = path
        self._configure_callbacks(train_config.callbacks, callbacks_state)
        self._workloads = self._sequence()
        self._started = False
        self._workload_len = 0
        self._workload_metrics: list[dict[str, Any]] = []
        self._workload_began = time.monotonic()

    # -- setting up ---------------------------------------------------------------------------

    def _periods(self, config: dict[str, Any]) -> None:
        gbs = self.context.get_global_batch_size()
        self.records_per_epoch = config.get("records_per_epoch") or None
        self.global_batch_size = gbs
        searcher = config.get("searcher") or {}
        self.searcher_metric = str(searcher.get("metric") or "")
        self.smaller_is_better = bool(searcher.get("smaller_is_better", True))
        found = _length_of(searcher.get("max_length"))
        unit = found[0] if found else str(searcher.get("time_metric") or "")
        if unit not in _UNITS:
            log.warning(
                "the searcher's lengths have no unit (batches, records or epochs); taking them "
                "as epochs, as Determined did"
            )
            unit = "epochs"
        self.unit = unit
        self.min_val_batches = self._period(config, "min_validation_period")
        self.min_ckpt_batches = self._period(config, "min_checkpoint_period")
        self.scheduling_unit = max(int(config.get("scheduling_unit") or 100), 1)
        self.checkpoint_policy = str(config.get("checkpoint_policy") or "best")
        self.want_initial_val = bool(config.get("perform_initial_validation"))

    def _period(self, config: dict[str, Any], key: str) -> int:
        found = _length_of(config.get(key))
        if found is None:
            return sys.maxsize
        unit, value = found
        if unit == "epochs" and not self.records_per_epoch:
            raise InvalidExperimentException(
                f"{key} in epochs needs records_per_epoch in the experiment config"
            )
        batches = self._as_batches(unit, value)
        return batches if batches >= 1 else sys.maxsize

    def _as_batches(self, unit: str, value: float) -> int:
        if unit == "batches":
            return int(value)
        if unit == "records":
            return max(int(value) // self.global_batch_size, 1)
        if not self.records_per_epoch:
            raise InvalidExperimentException(
                "a length in epochs needs records_per_epoch in the experiment config"
            )
        return max(int(value * self.records_per_epoch) // self.global_batch_size, 1)

    def _configure_callbacks(
        self, user_callbacks: list[Any] | None, saved: dict[str, Any] | None
    ) -> None:
        if not isinstance(user_callbacks, list | tuple | type(None)):
            raise InvalidExperimentException("keras_callbacks() must return a list of callbacks")
        callbacks = list(user_callbacks or [])
        if self.records_per_epoch is None:
            for cb in callbacks:
                defines = type(cb).on_epoch_end is not keras.callbacks.Callback.on_epoch_end
                if not defines or getattr(cb, "_skip_epoch_end_check", False):
                    continue
                if isinstance(cb, det_callbacks.Callback):
                    raise InvalidExperimentException(
                        f"{type(cb).__name__} defines on_epoch_end, which needs records_per_epoch "
                        "in the experiment config"
                    )
                log.warning(
                    "%s defines on_epoch_end, which is never called without records_per_epoch "
                    "in the experiment config",
                    type(cb).__name__,
                )
        self.history = det_callbacks._DeterminedHistory()
        object.__setattr__(self.model, "history", self.history)
        callbacks.append(self.history)
        if self.context._fit_verbose:
            callbacks.insert(0, det_callbacks._DeterminedProgress())
        per_epoch = None
        if self.records_per_epoch is not None:
            per_epoch = max(int(self.records_per_epoch) // self.global_batch_size, 1)
        self.multiplexer = _Multiplexer(
            self, callbacks, self.chief, self.context.get_per_slot_batch_size(), per_epoch, saved
        )
        self.callback_list = keras.callbacks.CallbackList(
            [self.multiplexer],
            model=self.model,
            verbose=0,
            epochs=None,
            steps=None,
        )
        self.model.stop_training = False

    # -- checkpoints --------------------------------------------------------------------------

    def _load_state(self, path: Path) -> dict[str, Any] | None:
        """Read the loop's, the RNG's and the callbacks' state; weights come once fit() has
        built the model."""
        rng = path / "rng_state.pkl"
        if rng.exists():
            with rng.open("rb") as f:
                _rng.set_rng_state(pickle.load(f))
        else:
            log.warning("the checkpoint has no random state to restore")
        saved: dict[str, Any] | None = None
        sequencer = path / "workload_sequencer.pkl"
        if sequencer.exists():
            with sequencer.open("rb") as f:
                saved = dict(pickle.load(f))
        if saved is not None and saved.get("trial_id") == self.state.trial_id:
            known = ("trial_id", "last_ckpt", "steps_completed", "step_id", "last_val")
            self.state = SequencerState(**{k: saved[k] for k in known if k in saved})
        else:
            # Another trial's checkpoint (a warm start): its weights, not its place in training.
            return None
        self.context._steps_completed = self.state.steps_completed
        callbacks = path / "determined-callbacks.v1.pkl"
        if callbacks.exists():
            with callbacks.open("rb") as f:
                return dict(pickle.load(f))
        return None

    def _restore_weights(self) -> None:
        if self._restore_from is None:
            return
        load_checkpoint(self._restore_from, self.model, self.context._optimizers)
        self._restore_from = None
        self._stack.close()

    def _checkpoint(self, already_exiting: bool) -> None:
        self.core.train.set_status("checkpointing")
        self.state.last_ckpt = self.state.steps_completed
        metadata = {
            "determined_version": __version__,
            "steps_completed": self.state.steps_completed,
            "framework": f"tensorflow-{tf.__version__}",
            "format": "saved_weights",
        }
        try:
            with self.core.checkpoint.store_path(metadata) as (path, _):
                save_checkpoint(
                    path,
                    self.model,
                    self.context,
                    self.trial,
                    self.multiplexer,
                    vars(self.state),
                )
        except InvalidHP:
            self.core.train.report_early_exit(EarlyExitReason.INVALID_HP)
            if not already_exiting:
                raise ShouldExit(skip_exit_checkpoint=True) from None
            return
        if not already_exiting:
            self._exit_if_asked()

    def _checkpoint_is_current(self) -> bool:
        return self.state.last_ckpt == self.state.steps_completed

    def _validation_is_current(self) -> bool:
        return self.state.last_val == self.state.steps_completed

    # -- the workloads ------------------------------------------------------------------------

    def _until_val(self) -> int:
        return self.state.last_val + self.min_val_batches - self.state.steps_completed

    def _until_ckpt(self) -> int:
        return self.state.last_ckpt + self.min_ckpt_batches - self.state.steps_completed

    def _until_op(self, op: SearcherOperation) -> int:
        return self._as_batches(self.unit, op.length) - self.state.steps_completed

    def _sequence(self) -> Generator[int, dict[str, Any], None]:
        """Each training workload's length is yielded; its metrics are sent back."""
        try:
            if self.want_initial_val and self.state.steps_completed == 0:
                self._validate(None)
            for op in self.core.searcher.operations():
                while self._until_op(op) > 0:
                    batches = max(
                        1,
                        min(
                            self._until_ckpt(),
                            self._until_val(),
                            self._until_op(op),
                            self.scheduling_unit,
                        ),
                    )
                    metrics = yield batches
                    self._trained(batches, metrics, op)
                    # Validate, then checkpoint, as Determined did between workloads.
                    if self._until_val() < 1:
                        self._validate(op)
                    if self._until_ckpt() < 1:
                        self._checkpoint(already_exiting=False)
                if not self._checkpoint_is_current():
                    self._checkpoint(already_exiting=False)
                if not self._validation_is_current() or not op._completed:
                    self._validate(op)
        except ShouldExit as exc:
            if not exc.skip_exit_checkpoint and not self._checkpoint_is_current():
                self._checkpoint(already_exiting=True)
        except InvalidHP:
            if not self._checkpoint_is_current():
                self._checkpoint(already_exiting=True)
            raise

    def _trained(self, batches: int, metrics: dict[str, Any], op: SearcherOperation) -> None:
        self.state.steps_completed += batches
        self.state.step_id += 1
        self.core.train.report_training_metrics(
            steps_completed=self.state.steps_completed,
            metrics=metrics["avg_metrics"],
            batch_metrics=metrics["batch_metrics"],
        )
        steps = self.state.steps_completed
        if self.unit == "records":
            op.report_progress(steps * self.global_batch_size)
        elif self.unit == "epochs":
            op.report_progress(steps / self._as_batches("epochs", 1))
        else:
            op.report_progress(steps)
        self._exit_if_asked()

    def _exit_if_asked(self) -> None:
        if self.context.get_stop_requested() or self.core.preempt.should_preempt():
            raise ShouldExit()

    def _advance(self, metrics: dict[str, Any] | None) -> None:
        """Run the workloads up to the next stretch of training, and set it up."""
        try:
            if self._started:
                assert metrics is not None
                batches = self._workloads.send(metrics)
            else:
                self._started = True
                batches = next(self._workloads)
        except StopIteration:
            self.multiplexer._train_end()
            raise _TrainingFinished() from None
        self.core.train.set_status("training")
        self._workload_len = batches
        self._workload_metrics = []
        self._workload_began = time.monotonic()
        self.multiplexer._set_batches_requested(batches)

    def _batch_trained(self, logs: dict[str, Any]) -> None:
        self._workload_metrics.append(
            {k: _plain(v) for k, v in logs.items() if k not in ("batch", "size")}
        )
        if len(self._workload_metrics) < self._workload_len:
            return
        # Keras's logs after the last batch are the averages over the whole workload.
        final = dict(self._workload_metrics[-1])
        final.setdefault("batches", self.multiplexer.state.total_batches)
        final.setdefault("epochs", self.multiplexer.state.epoch)
        self.multiplexer._train_workload_end(final)
        self._stop_training_check()
        log.info(
            "trained %d batches in %.2fs",
            self._workload_len,
            time.monotonic() - self._workload_began,
        )
        self._advance({"avg_metrics": final, "batch_metrics": self._workload_metrics})
        self.model.reset_metrics()

    def _stop_training_check(self) -> None:
        # A callback's model.stop_training asks the trial to stop (checkpointed first).
        if self.model.stop_training:
            self.model.stop_training = False
            self.context.set_stop_requested(True)

    # -- validating ---------------------------------------------------------------------------

    def _validate(self, op: SearcherOperation | None) -> None:
        self.core.train.set_status("validating")
        started = time.monotonic()
        metrics = self._evaluate()
        self.multiplexer._test_end(metrics)
        self._stop_training_check()
        log.info("validated in %.2fs: %s", time.monotonic() - started, metrics)
        metrics.setdefault("batches", self.multiplexer.state.total_batches)
        metrics.setdefault("epochs", self.multiplexer.state.epoch)
        name = self.searcher_metric
        if name not in metrics:
            raise RuntimeError(
                f"the searcher's metric {name!r} is not among the validation metrics "
                f"{sorted(metrics)}: Keras's metrics are reported with a val_ prefix "
                "(searcher.metric: val_loss)"
            )
        value = metrics[name]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise RuntimeError(f"the searcher's metric {name!r} must be a number, got {value!r}")
        if op is not None and self._until_op(op) < 1 and not op._completed:
            op.report_completed(float(value))
        best_before = None
        if self.checkpoint_policy == "best" and not self._checkpoint_is_current():
            best_before = self.core.train.get_experiment_best_validation()
        self.state.last_val = self.state.steps_completed
        self.core.train.report_validation_metrics(
            steps_completed=self.state.steps_completed, metrics=metrics
        )
        if self.context.get_stop_requested():
            raise ShouldExit()
        if not self._checkpoint_is_current():
            better = best_before is None or (
                value < best_before if self.smaller_is_better else value > best_before
            )
            if self.checkpoint_policy == "all" or (self.checkpoint_policy == "best" and better):
                self._checkpoint(already_exiting=False)
        if self.core.preempt.should_preempt():
            raise ShouldExit()

    def _evaluate(self) -> dict[str, Any]:
        data = self.validation_data
        steps: int | None = None
        if isinstance(data, tf.data.Dataset):
            steps = self.context._fit_validation_steps
        elif _data._is_sequence(data):
            steps = len(data)
            data = _data.validation_batches(self.validation_data)
        results = self.model.evaluate(
            data, callbacks=self.callback_list, steps=steps, verbose=0, return_dict=True
        )
        if _data._is_sequence(self.validation_data):
            self.validation_data.on_epoch_end()
        return {f"val_{k}": _plain(v) for k, v in dict(results).items()}

    # -- running ------------------------------------------------------------------------------

    def run(self) -> None:
        data = self.training_data
        class_weight = self.context._fit_class_weight
        fit_kwargs: dict[str, Any] = {}
        if isinstance(data, tf.data.Dataset):
            if self.context._fit_shuffle:
                log.warning(
                    "shuffle=True is ignored for a tf.data.Dataset: call .shuffle() on the "
                    "dataset instead"
                )
            data = data.repeat()
            if class_weight is not None:
                fit_kwargs["class_weight"] = class_weight
        else:
            data = _data.training_batches(
                data,
                shuffle=self.context._fit_shuffle,
                seed=self.context.get_trial_seed(),
                skip=self.state.steps_completed,
                class_weight=class_weight,
            )
        try:
            self.model.fit(
                data,
                callbacks=self.callback_list,
                shuffle=False,
                steps_per_epoch=sys.maxsize,
                epochs=sys.maxsize,
                verbose=0,
                **fit_kwargs,
            )
        except _TrainingFinished:
            pass
        finally:
            self._stack.close()
            # The dataset's iterator over the Python generator is in a reference cycle: freed
            # now, not at interpreter exit, when TensorFlow complains that Python is gone.
            del data
            gc.collect()

    @classmethod
    def from_trial(
        cls, trial: TFKerasTrial, context: TFKerasTrialContext, latest_checkpoint: str | None
    ) -> TFKerasTrialController:
        if not isinstance(trial, TFKerasTrial):
            raise TypeError(f"a det.keras.TFKerasTrial is needed, got {type(trial).__name__}")
        batch_size = context.get_per_slot_batch_size()
        training = _data._adapt_data_from_data_loader(
            trial.build_training_data_loader(), batch_size
        )
        validation = _data._adapt_data_from_data_loader(
            trial.build_validation_data_loader(), batch_size
        )
        trial.build_model()
        context._compile()
        callbacks = trial.keras_callbacks()
        config = TFKerasTrainConfig(training, validation, callbacks)
        return cls(trial, context, config, latest_checkpoint)


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray | tf.Tensor):
        array = np.asarray(value)
        return array.item() if array.size == 1 else array.tolist()
    return value
