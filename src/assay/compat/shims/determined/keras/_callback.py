"""``det.keras.DeterminedCallback``: a plain Keras 3 ``model.fit()`` connected to the cluster
through the Core API, as Determined 0.38 connects it.

What it does, as Determined's does: the chief reports training metrics every epoch (or every
``train_metrics_report_period`` batches) and validation metrics after each validation, each
with ``epochs`` and ``batches``; it reports progress (epochs done of ``fit(epochs=...)``),
checkpoints every ``checkpoint_epochs`` epochs and whenever training ends with work not yet
checkpointed, checks for a pause or preemption at each epoch's end and then stops ``fit()``;
restoring a checkpoint whose ``continue_id`` matches continues at the epoch after the one it
saved (with its step count), and one whose ``continue_id`` differs is a warm start (its weights,
epoch 0). Every rank saves the model (``MultiWorkerMirroredStrategy`` needs that); only the
chief's copy is kept.

Where it differs from Determined's, and why:

- The model is ``model_checkpoint.weights.h5`` (Keras 3's ``save_weights``, which refuses any
  other suffix; the file holds the optimizer's state too), where Determined on Keras 2 wrote a
  TensorFlow-format ``model_checkpoint`` (``model_checkpoint.index`` and data files). The path
  given to ``save_model``/``load_model`` is still ``<checkpoint>/model_checkpoint``, as
  Determined gives it; the default implementations add the suffix. A TensorFlow-format
  checkpoint (Keras 2's) cannot be read by Keras 3 and is refused naming both formats.
- ``callback_state`` is Determined's pickle with Determined's keys, read back as plain values
  only. ``code/`` holds the trial's code files on a cluster (as assay's PyTorch checkpoints do);
  off a cluster none are copied.
- Validation metrics are reported under Keras's names (``loss``, as Determined reports them)
  and under the names ``fit()`` gives them (``val_loss``), so a searcher metric written either
  way (Determined's own examples use both) finds its value.
- Batches are counted from Keras's batch index, so ``steps_per_execution`` > 1 counts every
  batch; an integer ``train_metrics_report_period`` reports whenever a multiple is passed.
- Keras 2 models (``tf_keras``, ``TF_USE_LEGACY_KERAS=1``) are refused: this callback is a
  Keras 3 callback.

Keras 3 itself cannot yet ``fit()`` under ``MultiWorkerMirroredStrategy`` (keras-team/keras
issue 20585: it fails converting a ``PerReplica`` batch), which ``from_tf_config()`` returns for
several nodes as Determined's does; the callback's part of several ranks (every rank saving,
the chief's files kept, the chief alone reporting) works with any strategy that trains.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import keras  # type: ignore[import-untyped]

import assay.core
from assay.core import Context, DistributedContext

from .._code import CODE_DIR, copy_code
from ._callback_state import (
    MODEL_STEM,
    TF_FORMAT_INDEX,
    WEIGHTS_SUFFIX,
    read_state,
    write_state,
)

log = logging.getLogger("determined.keras")

_NOT_METRICS = ("batch", "size")
"""Keys Keras puts in logs that are bookkeeping, not metrics."""


def _check_options(report_period: int | str, checkpoint_epochs: int) -> None:
    period_ok = report_period == "epoch" or (
        isinstance(report_period, int) and not isinstance(report_period, bool) and report_period > 0
    )
    if not period_ok:
        raise ValueError(
            f'train_metrics_report_period must be "epoch" or a number of batches above 0, got '
            f"{report_period!r}"
        )
    if isinstance(checkpoint_epochs, bool) or not isinstance(checkpoint_epochs, int):
        raise TypeError(
            f"checkpoint_epochs must be an int (0: only when training ends or is preempted), "
            f"got {type(checkpoint_epochs).__name__}"
        )
    if checkpoint_epochs < 0:
        raise ValueError(
            f"checkpoint_epochs must be 0 or more (0: only when training ends or is "
            f"preempted), got {checkpoint_epochs}"
        )


def _metrics(logs: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (logs or {}).items() if k not in _NOT_METRICS}


class DeterminedCallback(keras.callbacks.ProgbarLogger):  # type: ignore[misc]
    """Adds reporting, checkpointing, pausing and restoring to ``model.fit()``: pass it among
    ``callbacks``. Do not combine it with ``BackupAndRestore`` or ``ModelCheckpoint``, whose
    restoring and saving would fight its own.

    - ``fit(initial_epoch=...)`` is overridden when a checkpoint of this run is restored: rely
      on ``checkpoint`` and ``continue_id``.
    - Checkpoints are saved every ``checkpoint_epochs`` epochs, and always when training
      finishes or is preempted with epochs not yet saved.
    - A pause or preemption is noticed at the end of an epoch.
    - Keras's progress bar is replaced by log-friendly lines (with ``verbose`` not 0).
    - The model is saved with ``model.save_weights()`` and restored with
      ``model.load_weights()`` (``<checkpoint>/model_checkpoint.weights.h5``); subclass and
      override :meth:`save_model` and :meth:`load_model` to change that.

    Arguments:
        core_context: the result of ``det.core.init()``.
        checkpoint: None, or the uuid of a checkpoint to start from (on a cluster, most likely
            ``det.get_cluster_info().latest_checkpoint``).
        continue_id: saved with every checkpoint; when the restored checkpoint's matches,
            training continues where it stopped (a pause), otherwise only its weights are
            loaded and training starts at epoch 0 (a warm start). On a cluster, most likely
            ``det.get_cluster_info().trial.trial_id``.
        train_metrics_report_period: ``"epoch"``, or a number of batches between training
            metric reports.
        checkpoint_epochs: save every this many epochs; 0 saves only when training ends or is
            preempted.
    """

    def __init__(
        self,
        core_context: Context,
        checkpoint: str | None,
        continue_id: int | str,
        *,
        train_metrics_report_period: int | str = "epoch",
        checkpoint_epochs: int = 1,
    ) -> None:
        _check_options(train_metrics_report_period, checkpoint_epochs)
        # A ProgbarLogger only so that fit() adds no progress bar of its own: none of its
        # behaviour is wanted, so its own __init__ is skipped.
        keras.callbacks.Callback.__init__(self)
        self._core = core_context
        self._checkpoint = checkpoint
        self._continue_id = continue_id
        self._report_period = train_metrics_report_period
        self._checkpoint_epochs = checkpoint_epochs
        self._is_chief = core_context.distributed.rank == 0
        self._is_verbose = False
        # Determined's undocumented switch for when copying the code goes wrong.
        self._save_user_code = True

        self._steps_completed = 0
        self._epoch_start_steps = 0
        self._last_reported_steps = 0
        self._epoch = -1
        # Epochs trained and saved, to know at the end whether anything is unsaved.
        self._last_train_epoch = -1
        self._last_ckpt_epoch = -1
        self._set_initial_epoch = False

        self._training_length: int | None = None
        self._validation_length: int | None = None
        self._training_batches = 0
        self._validation_batches = 0
        self._percent_reported = -1

        # The restored checkpoint's directory, kept until the first batch has run: Keras may
        # read the weights lazily.
        self._ckpt_context: contextlib.ExitStack | None = None

    # -- Keras's plumbing ---------------------------------------------------------------------

    def set_model(self, model: Any) -> None:
        if not isinstance(model, keras.Model):
            kind = f"{type(model).__module__}.{type(model).__qualname__}"
            raise TypeError(
                f"DeterminedCallback is a Keras 3 callback, but fit() was called on a {kind}: "
                f"build the model with Keras 3 (import keras, or tensorflow.keras without "
                f"TF_USE_LEGACY_KERAS=1)"
            )
        super().set_model(model)

    def set_params(self, params: dict[str, Any]) -> None:
        keras.callbacks.Callback.set_params(self, params)
        self._is_verbose = params.get("verbose", 0) != 0
        steps = params.get("steps")
        if isinstance(steps, int) and steps > 0:
            self._training_length = steps

    # The ProgbarLogger hooks this class does not use, silenced.
    def on_predict_begin(self, logs: dict[str, Any] | None = None) -> None:
        pass

    def on_predict_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        pass

    def on_predict_end(self, logs: dict[str, Any] | None = None) -> None:
        pass

    # -- training -----------------------------------------------------------------------------

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        # fit() reads the model's initial epoch after this hook, so a restore here moves it.
        self._ckpt_context = self._load(self._checkpoint)

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self._epoch = epoch
        self._epoch_start_steps = self._steps_completed
        self._training_batches = 0
        if not self._is_chief:
            return
        self._core.train.set_status("training")
        if self._is_verbose:
            self._percent_reported = -1
            self._print_progress(None, True, 0, self._training_length)

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        # Keras gives the index of the last batch run: with steps_per_execution > 1 one call
        # stands for several batches.
        done = batch + 1 if isinstance(batch, int) else self._training_batches + 1
        self._training_batches = max(done, self._training_batches + 1)
        self._steps_completed = self._epoch_start_steps + self._training_batches
        if self._ckpt_context is not None:
            self._ckpt_context.close()
            self._ckpt_context = None
        if not self._is_chief:
            return
        period = self._report_period
        if isinstance(period, int) and self._steps_completed // period > (
            self._last_reported_steps // period
        ):
            self._last_reported_steps = self._steps_completed
            metrics = _metrics(logs)
            metrics.setdefault("epochs", self._epoch + 1)
            metrics.setdefault("batches", self._steps_completed)
            self._core.train.report_metrics("training", self._steps_completed, metrics)
        if self._is_verbose:
            self._print_progress(logs, True, self._training_batches, self._training_length)

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        if self._is_chief and self._report_period == "epoch":
            metrics = {k: v for k, v in _metrics(logs).items() if not k.startswith("val_")}
            metrics.setdefault("epochs", epoch + 1)
            metrics.setdefault("batches", self._steps_completed)
            self._core.train.report_metrics("training", self._steps_completed, metrics)
        epochs = self.params.get("epochs") if self.params else None
        if self._is_chief and epochs:
            self._core.train.report_progress(min(1.0, (epoch + 1) / epochs))

        self._last_train_epoch = epoch
        if self._checkpoint_epochs > 0 and (epoch + 1) % self._checkpoint_epochs == 0:
            self._save(epoch)
            self._last_ckpt_epoch = epoch

        # After the checkpoint, which can take a while; a preemption that finds this epoch
        # unsaved is saved by on_train_end.
        if self._core.preempt.should_preempt():
            self.model.stop_training = True

        if self._training_length is None and self._training_batches:
            self._training_length = self._training_batches

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        if self._last_train_epoch > self._last_ckpt_epoch:
            self._save(self._last_train_epoch)
            self._last_ckpt_epoch = self._last_train_epoch
        if self._ckpt_context is not None:
            self._ckpt_context.close()
            self._ckpt_context = None
        if self._set_initial_epoch:
            # Only this fit() resumes; a later fit() of the same model starts where it is told.
            self.model._initial_epoch = None
            self._set_initial_epoch = False
        if self._is_chief:
            self._core.train.set_status("finishing")

    # -- validation ---------------------------------------------------------------------------

    def on_test_begin(self, logs: dict[str, Any] | None = None) -> None:
        self._validation_batches = 0
        if not self._is_chief:
            return
        self._core.train.set_status("validating")
        if self._is_verbose:
            self._percent_reported = -1
            self._print_progress(None, False, 0, self._validation_length)

    def on_test_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self._validation_batches = max(
            batch + 1 if isinstance(batch, int) else 0, self._validation_batches + 1
        )
        if self._is_chief and self._is_verbose:
            self._print_progress(logs, False, self._validation_batches, self._validation_length)

    def on_test_end(self, logs: dict[str, Any] | None = None) -> None:
        if self._validation_batches:
            self._validation_length = self._validation_batches
        if not self._is_chief:
            return
        plain = _metrics(logs)
        metrics = {**plain}
        metrics.update({f"val_{k}": v for k, v in plain.items() if not k.startswith("val_")})
        metrics.setdefault("epochs", self._epoch + 1)
        metrics.setdefault("batches", self._steps_completed)
        self._core.train.report_metrics("validation", self._steps_completed, metrics)

    # -- progress lines -----------------------------------------------------------------------

    def _print_progress(
        self, logs: dict[str, Any] | None, training: bool, batches: int, total: int | None
    ) -> None:
        # Lines for a log, not a terminal: at most one per 10% of an epoch, when its length
        # is known (from fit()'s params or the epoch before).
        if not total:
            return
        tenth = int(batches * 10 / total) * 10
        if tenth <= self._percent_reported:
            return
        percent = int(batches * 100 / total)
        self._percent_reported = percent
        if training:
            line = (
                f"total batches trained: {self._steps_completed}, epoch {percent}% complete "
                f"({batches}/{total})"
            )
        else:
            line = (
                f"validation after batch: {self._steps_completed}, validation {percent}% "
                f"complete ({batches}/{total})"
            )
        if logs:
            line += f": {_metrics(logs)}"
        print(line, flush=True)

    # -- checkpoints --------------------------------------------------------------------------

    def _save(self, epoch: int) -> None:
        if self._is_chief:
            self._core.train.set_status("checkpointing")
        dist = self._core.distributed
        metadata = {"steps_completed": self._steps_completed}
        # Every rank saves (MultiWorkerMirroredStrategy reads its variables collectively), so
        # with several ranks every rank takes part in storing it; only the chief writes files.
        with self._core.checkpoint.store_path(metadata, shard=dist.size > 1) as (path, _):
            self.save_model(self.model, str(path / MODEL_STEM), dist)
            if self._is_chief:
                state = {
                    "epoch": epoch,
                    "steps_completed": self._steps_completed,
                    "continue_id": self._continue_id,
                    "training_length": self._training_length,
                    "validation_length": self._validation_length,
                }
                write_state(path, state)
                if self._save_user_code and assay.core.get_cluster_info() is not None:
                    copy_code(Path.cwd(), path / CODE_DIR)

    def _load(self, checkpoint: str | None) -> contextlib.ExitStack | None:
        if checkpoint is None:
            return None
        if self._is_chief:
            self._core.train.set_status("restoring")
            log.info("restoring checkpoint %s", checkpoint)
        with contextlib.ExitStack() as stack:
            path = stack.enter_context(self._core.checkpoint.restore_path(checkpoint))
            self.load_model(self.model, str(path / MODEL_STEM), self._core.distributed)
            self._load_training_state(path, checkpoint)
            return stack.pop_all()
        raise AssertionError("unreachable: the with block returns")  # for mypy

    def _load_training_state(self, path: Path, checkpoint: str) -> None:
        try:
            state = read_state(path)
        except ValueError as exc:
            raise ValueError(f"checkpoint {checkpoint}: {exc}") from None
        if state is None or state["continue_id"] != self._continue_id:
            # A warm start: the weights, and training from epoch 0.
            return
        self._steps_completed = int(state["steps_completed"])
        self._last_reported_steps = self._steps_completed
        self._training_length = state["training_length"] or self._training_length
        self._validation_length = state["validation_length"]
        initial_epoch = int(state["epoch"]) + 1
        # Keras 3's fit() starts at the model's _initial_epoch when it is set (it is how
        # BackupAndRestore resumes); the epoch saved was complete, so the next one is first.
        self.model._initial_epoch = initial_epoch
        self._set_initial_epoch = True
        self._last_train_epoch = self._last_ckpt_epoch = initial_epoch - 1
        log.info(
            "continuing from checkpoint %s at epoch %d (%d batches trained)",
            checkpoint,
            initial_epoch,
            self._steps_completed,
        )

    def save_model(self, model: keras.Model, path: str, distributed: DistributedContext) -> None:
        """Save ``model`` to ``path`` (``<checkpoint>/model_checkpoint``); override to save it
        differently. Every rank calls it, as ``MultiWorkerMirroredStrategy`` needs; the default
        keeps the chief's ``path + ".weights.h5"`` and deletes the other ranks' copies."""
        if distributed.rank == 0:
            model.save_weights(path + WEIGHTS_SUFFIX)
            return
        scratch = tempfile.mkdtemp(prefix="assay-keras-worker-")
        try:
            model.save_weights(os.path.join(scratch, MODEL_STEM + WEIGHTS_SUFFIX))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def load_model(self, model: keras.Model, path: str, distributed: DistributedContext) -> None:
        """Load ``model`` from ``path`` (``<checkpoint>/model_checkpoint``); override to load it
        differently. The default reads ``path + ".weights.h5"``, the optimizer's state
        included."""
        del distributed
        weights = path + WEIGHTS_SUFFIX
        if not os.path.exists(weights):
            name = os.path.basename(path)
            if os.path.exists(path + TF_FORMAT_INDEX):
                raise ValueError(
                    f"the checkpoint holds {name} in TensorFlow's checkpoint format (Keras 2's "
                    f"save_weights), which Keras 3 cannot load; Keras 3 reads "
                    f"{name}{WEIGHTS_SUFFIX}: convert the weights with Keras 2, or override "
                    f"DeterminedCallback.load_model to read them"
                )
            raise FileNotFoundError(
                f"the checkpoint has no {name}{WEIGHTS_SUFFIX} (DeterminedCallback's model "
                f"file); a checkpoint saved by an overridden save_model needs the matching "
                f"load_model"
            )
        optimizer = getattr(model, "optimizer", None)
        if optimizer is not None and not optimizer.built:
            # The saved file holds the optimizer's variables: they must exist to be loaded,
            # made under the model's strategy like those fit() makes.
            strategy = getattr(model, "distribute_strategy", None)
            with strategy.scope() if strategy is not None else contextlib.nullcontext():
                optimizer.build(model.trainable_variables)
        model.load_weights(weights)
