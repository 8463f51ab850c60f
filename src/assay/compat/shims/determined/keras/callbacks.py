"""``det.keras.callbacks``: the Keras callbacks of Determined's ``TFKerasTrial``.

``Callback`` adds Determined's hooks to ``keras.callbacks.Callback``:
``on_train_workload_begin`` and ``on_train_workload_end`` around each stretch of training
(at most ``scheduling_unit`` batches), ``on_checkpoint_end`` once a checkpoint's files are
written, and ``get_state``/``load_state`` to carry a callback's state through a pause.
Within a ``TFKerasTrial``, as in Determined:

- ``on_epoch_begin``/``on_epoch_end`` follow ``records_per_epoch`` (with empty logs), not
  the end of the data; without ``records_per_epoch`` they are never called, and a
  ``Callback`` that defines ``on_epoch_end`` is refused;
- ``on_test_end`` gets the validation metrics (``val_`` prefixed);
- ``on_train_begin`` is called once per run of the trial process and ``on_train_end`` when
  the process stops training (done, paused or preempted);
- setting ``model.stop_training`` asks the trial to checkpoint and stop.

``EarlyStopping`` and ``ReduceLROnPlateau`` are Keras's, checked at each validation instead of
each epoch and saved in checkpoints; ``TensorBoard`` is Keras's, writing into the trial's
TensorBoard directory once per training workload. Unlike Determined's (which left it out),
``EarlyStopping`` keeps its best value across a pause too.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import keras

from assay.protocol import TrialEnv

log = logging.getLogger("determined.keras")


class Callback(keras.callbacks.Callback):  # type: ignore[misc]
    """A Keras callback with Determined's hooks (deprecated by Determined 0.38 with
    ``TFKerasTrial``; it still works)."""

    def on_train_workload_begin(
        self, total_batches_trained: int, batches_requested: int | None, logs: dict[str, Any]
    ) -> None:
        """Before a stretch of training of ``batches_requested`` batches (at most the
        experiment's ``scheduling_unit``); ``logs`` is empty."""

    def on_train_workload_end(self, total_batches_trained: int, logs: dict[str, Any]) -> None:
        """After a stretch of training; ``logs`` holds its training metrics."""

    def on_checkpoint_end(self, checkpoint_dir: str) -> None:
        """After a checkpoint's files are written: files added to ``checkpoint_dir`` are kept
        with it."""

    def get_state(self) -> Any:
        """A picklable state, handed to :meth:`load_state` when training resumes."""
        return None

    def load_state(self, state: Any) -> None:
        """Restore what :meth:`get_state` returned."""


def _chief_only(callback: Any) -> bool:
    return bool(getattr(callback, "_chief_worker_only", False))


class _MultiplexerBase(keras.callbacks.Callback):  # type: ignore[misc]
    """Hands Keras's calls on to the trial's callbacks, moving epoch calls to the epochs that
    ``records_per_epoch`` defines, and adds Determined's hooks; the trial's loop calls the
    methods that begin with an underscore."""

    class SavableState:
        def __init__(
            self,
            epoch: int,
            want_epoch_begin: bool,
            epoch_batches: int,
            latest_training_metrics: dict[str, Any],
            total_batches: int,
        ) -> None:
            self.epoch = epoch
            self.want_epoch_begin = want_epoch_begin
            self.epoch_batches = epoch_batches
            self.latest_training_metrics = latest_training_metrics
            self.total_batches = total_batches

    def __init__(
        self,
        callbacks: list[Any],
        is_chief: bool,
        batch_size: int,
        batches_per_epoch: int | None,
        load_state: dict[str, Any] | None,
    ) -> None:
        super().__init__()
        self.all_callbacks = callbacks
        self.callbacks = [cb for cb in callbacks if is_chief or not _chief_only(cb)]
        self.is_chief = is_chief
        self.batch_size = batch_size
        self.batches_per_epoch = batches_per_epoch
        self.load_state = load_state
        self.batches_requested: int | None = None
        self.want_train_workload_begin = True
        self.state = self.SavableState(
            epoch=0,
            want_epoch_begin=True,
            epoch_batches=0,
            latest_training_metrics={},
            total_batches=0,
        )

    def set_params(self, params: dict[str, Any]) -> None:
        super().set_params(params)
        for cb in self.callbacks:
            cb.set_params(params)

    def set_model(self, model: Any) -> None:
        super().set_model(model)
        for cb in self.callbacks:
            cb.set_model(model)

    def _each(self, hook: str, *args: Any) -> None:
        for cb in self.callbacks:
            getattr(cb, hook)(*args)

    def _each_det(self, hook: str, *args: Any) -> None:
        for cb in self.callbacks:
            if isinstance(cb, Callback):
                getattr(cb, hook)(*args)

    # Keras's epochs are not the trial's: these are called from the batch counts instead.
    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        pass

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        pass

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        self._each("on_train_begin", logs or {})
        # Loaded after on_train_begin, which Keras's own callbacks use to reset their state.
        self._load_saved_state()

    def on_train_batch_begin(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        if self.state.want_epoch_begin:
            self.state.want_epoch_begin = False
            self._each("on_epoch_begin", self.state.epoch, {})
        if self.want_train_workload_begin:
            self.want_train_workload_begin = False
            self._each_det(
                "on_train_workload_begin", self.state.total_batches, self.batches_requested, {}
            )
        self._each("on_train_batch_begin", self.state.epoch_batches, logs or {})

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self._each("on_train_batch_end", self.state.epoch_batches, logs or {})
        self.state.total_batches += 1
        self.state.epoch_batches += 1
        if (
            self.batches_per_epoch is not None
            and self.state.epoch_batches >= self.batches_per_epoch
        ):
            self._each("on_epoch_end", self.state.epoch, {})
            self.state.epoch_batches = 0
            self.state.epoch += 1
            self.state.want_epoch_begin = True

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        # Keras calls it when fit() returns, which the trial's fit never does: the trial's loop
        # calls _train_end() when training stops.
        pass

    def on_test_begin(self, logs: dict[str, Any] | None = None) -> None:
        self._each("on_test_begin", logs or {})

    def on_test_batch_begin(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self._each("on_test_batch_begin", batch, logs or {})

    def on_test_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self._each("on_test_batch_end", batch, logs or {})

    def on_test_end(self, logs: dict[str, Any] | None = None) -> None:
        # Called by the trial's loop with the validation metrics instead (_test_end).
        pass

    def on_predict_begin(self, logs: dict[str, Any] | None = None) -> None:
        self._each("on_predict_begin", logs or {})

    def on_predict_batch_begin(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self._each("on_predict_batch_begin", batch, logs or {})

    def on_predict_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self._each("on_predict_batch_end", batch, logs or {})

    def on_predict_end(self, logs: dict[str, Any] | None = None) -> None:
        self._each("on_predict_end", logs or {})

    def _load_saved_state(self) -> None:
        if self.load_state is None:
            return
        self.state = self.SavableState(**self.load_state["self"])
        for cb, state in zip(self.all_callbacks, self.load_state["callbacks"], strict=False):
            if isinstance(cb, Callback):
                cb.load_state(state)
        self.load_state = None

    def _get_state(self) -> dict[str, Any]:
        states = [cb.get_state() if isinstance(cb, Callback) else None for cb in self.all_callbacks]
        return {"self": vars(self.state), "callbacks": states}

    def _checkpoint_end(self, checkpoint_dir: Path) -> None:
        self._each_det("on_checkpoint_end", str(checkpoint_dir))

    def _set_batches_requested(self, batches: int) -> None:
        self.batches_requested = batches

    def _test_end(self, logs: dict[str, Any]) -> None:
        self._each("on_test_end", logs)

    def _train_workload_end(self, metrics: dict[str, Any]) -> None:
        self.state.latest_training_metrics = metrics
        self._each_det("on_train_workload_end", self.state.total_batches, metrics)
        self.want_train_workload_begin = True

    def _train_end(self) -> None:
        self._each("on_train_end", {})


class _DeterminedProgress(Callback):
    """Progress in the trial log, at most every 10% of a workload or a validation (what
    ``configure_fit(verbose=True)``, the default, shows instead of Keras's progress bar)."""

    _chief_worker_only = True

    class SavableState:
        def __init__(self, trained_total: int, validation_len: int | None) -> None:
            self.trained_total = trained_total
            self.validation_len = validation_len

    def __init__(self) -> None:
        super().__init__()
        self.state = self.SavableState(trained_total=0, validation_len=None)
        self.train_len: int | None = None
        self.batches = 0
        self.percent_reported = -1

    def _report(
        self, logs: dict[str, Any] | None, training: bool, batches: int, total: int | None
    ) -> None:
        if not total:
            return
        if int(batches / total * 10) * 10 <= self.percent_reported:
            return
        percent = int(batches / total * 100)
        self.percent_reported = percent
        if training:
            text = (
                f"total batches trained: {self.state.trained_total}, workload {percent}% "
                f"complete ({batches}/{total})"
            )
        else:
            text = (
                f"validation after batch: {self.state.trained_total}, validation {percent}% "
                f"complete ({batches}/{total})"
            )
        if logs is not None:
            text += f": { ({k: v for k, v in logs.items() if k not in ('batch', 'size')}) }"
        print(text, flush=True)

    def on_train_workload_begin(
        self, total_batches_trained: int, batches_requested: int | None, logs: dict[str, Any]
    ) -> None:
        self.train_len = batches_requested
        self.batches = 0
        self.state.trained_total = total_batches_trained
        self.percent_reported = -1
        self._report(None, True, 0, self.train_len)

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self.batches += 1
        self.state.trained_total += 1
        self._report(logs, True, self.batches, self.train_len)

    def on_test_begin(self, logs: dict[str, Any] | None = None) -> None:
        self.batches = 0
        self.percent_reported = -1
        self._report(None, False, 0, self.state.validation_len)

    def on_test_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self.batches += 1
        self._report(logs, False, self.batches, self.state.validation_len)

    def on_test_end(self, logs: dict[str, Any] | None = None) -> None:
        self.state.validation_len = self.batches

    def get_state(self) -> Any:
        return vars(self.state)

    def load_state(self, state: Any) -> None:
        self.state = self.SavableState(**state)


class _DeterminedHistory(Callback):
    """Like ``keras.callbacks.History``, of validations, and kept in checkpoints."""

    def __init__(self) -> None:
        super().__init__()
        self.history: dict[str, list[Any]] = {}

    def on_test_end(self, logs: dict[str, Any] | None = None) -> None:
        for key, value in (logs or {}).items():
            self.history.setdefault(key, []).append(value)
        object.__setattr__(self.model, "history", self)

    def get_state(self) -> Any:
        return self.history

    def load_state(self, state: Any) -> None:
        self.history = state


class _SavedAttributes:
    """State saved as the named attributes (those Determined saved)."""

    _savable_attributes: frozenset[str] = frozenset()

    def get_state(self) -> Any:
        return {
            name: getattr(self, name) for name in self._savable_attributes if hasattr(self, name)
        }

    def load_state(self, state: Any) -> None:
        for name in self._savable_attributes:
            if name in state:
                setattr(self, name, state[name])


def _deprecated(name: str) -> None:
    log.warning(
        "det.keras.callbacks.%s has been deprecated in Determined 0.38.0 along with TFKerasTrial; "
        "it still works here",
        name,
    )


class EarlyStopping(_SavedAttributes, keras.callbacks.EarlyStopping, Callback):  # type: ignore[misc]
    """Keras's ``EarlyStopping``, checked after each validation (``on_test_end``) rather than
    each epoch, and kept in checkpoints: set ``min_validation_period`` to the period to watch.
    Stopping checkpoints the trial and ends it."""

    _savable_attributes = frozenset(
        {
            "baseline",
            "best",
            "best_epoch",
            "best_weights",
            "restore_best_weights",
            "stopped_epoch",
            "wait",
            "test_end_count",
        }
    )

    # Its on_epoch_end does nothing: it needs no records_per_epoch.
    _skip_epoch_end_check = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        keras.callbacks.EarlyStopping.__init__(self, *args, **kwargs)
        self.test_end_count = 0
        _deprecated("EarlyStopping")

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        pass

    def on_test_end(self, logs: dict[str, Any] | None = None) -> None:
        keras.callbacks.EarlyStopping.on_epoch_end(self, self.test_end_count, logs)
        self.test_end_count += 1


class ReduceLROnPlateau(_SavedAttributes, keras.callbacks.ReduceLROnPlateau, Callback):  # type: ignore[misc]
    """Keras's ``ReduceLROnPlateau``, checked after each validation (``on_test_end``) rather
    than each epoch, and kept in checkpoints (the learning rate itself is the optimizer's)."""

    _savable_attributes = frozenset({"cooldown_counter", "wait", "best", "test_end_count"})

    # Its on_epoch_end does nothing: it needs no records_per_epoch.
    _skip_epoch_end_check = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        keras.callbacks.ReduceLROnPlateau.__init__(self, *args, **kwargs)
        self.test_end_count = 0
        _deprecated("ReduceLROnPlateau")

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        pass

    def on_test_end(self, logs: dict[str, Any] | None = None) -> None:
        keras.callbacks.ReduceLROnPlateau.on_epoch_end(self, self.test_end_count, logs)
        self.test_end_count += 1


def _tensorboard_dir() -> Path:
    path = Path(os.environ.get(TrialEnv.TENSORBOARD_DIR) or "tensorboard").absolute()
    path.mkdir(parents=True, exist_ok=True)
    return path


class TensorBoard(keras.callbacks.TensorBoard, Callback):  # type: ignore[misc]
    """Keras's ``TensorBoard`` writing into the trial's TensorBoard directory (a ``log_dir``
    given is ignored), each training workload taken as one of its epochs."""

    # It defines on_epoch_end, which the workload hooks call.
    _skip_epoch_end_check = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        given = kwargs.pop("log_dir", None)
        if given is not None:
            log.warning("log_dir=%s of det.keras.callbacks.TensorBoard is ignored", given)
        self.workload_end_count = 0
        keras.callbacks.TensorBoard.__init__(self, str(_tensorboard_dir()), *args, **kwargs)
        _deprecated("TensorBoard")

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        pass

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        pass

    def get_state(self) -> Any:
        return {"workload_end_count": self.workload_end_count}

    def load_state(self, state: Any) -> None:
        self.workload_end_count = int(state["workload_end_count"])

    def on_train_workload_begin(
        self, total_batches_trained: int, batches_requested: int | None, logs: dict[str, Any]
    ) -> None:
        keras.callbacks.TensorBoard.on_epoch_begin(self, self.workload_end_count, logs)

    def on_train_workload_end(self, total_batches_trained: int, logs: dict[str, Any]) -> None:
        keras.callbacks.TensorBoard.on_epoch_end(self, self.workload_end_count, logs)
        self.workload_end_count += 1
