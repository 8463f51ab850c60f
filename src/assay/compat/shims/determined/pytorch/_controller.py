"""The training loop of a ``PyTorchTrial``: batches to a length, with validations,
checkpoints and metric reports at their periods, stopping when the master asks."""

from __future__ import annotations

import contextlib
import enum
import inspect
import logging
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict
from typing import Any, ClassVar

import torch

from assay.core import EarlyExitReason, InvalidHP, SearcherOperation

from .. import __version__
from . import _checkpoint
from ._callback import PyTorchCallback
from ._context import InvalidExperimentException, PyTorchTrialContext
from ._data import DataLoader, repro_problem
from ._lr_scheduler import LRScheduler
from ._reducer import Reducer, average_across_ranks, mean_or_none, plain, reduce_values
from ._trial import PyTorchTrial
from ._units import Batch, Epoch, ShouldExit, TrainUnit, TrialState

log = logging.getLogger("determined.pytorch")


class Boundary(enum.Enum):
    TRAIN = "train"
    VALIDATE = "validate"
    CHECKPOINT = "checkpoint"
    REPORT = "report"


def _overrides(obj: Any, name: str, base: type) -> bool:
    return getattr(type(obj), name) is not getattr(base, name)


class TrialController:
    """Runs one trial's training to ``max_length``, or to each length its searcher asks for
    (``max_length`` None on a cluster)."""

    trial_base: ClassVar[type] = PyTorchTrial
    """The Trial API this loop trains (a subclass's loop trains another's), by its name."""
    trial_api: ClassVar[str] = "det.pytorch.PyTorchTrial"

    def __init__(
        self,
        trial: PyTorchTrial,
        context: PyTorchTrialContext,
        *,
        max_length: TrainUnit | None,
        searcher_unit: str | None,
        checkpoint_period: TrainUnit,
        validation_period: TrainUnit,
        reporting_period: TrainUnit,
        checkpoint_policy: str,
        smaller_is_better: bool,
        searcher_metric: str | None,
        latest_checkpoint: str | None,
        steps_completed: int,
        local_training: bool,
        test_mode: bool,
        step_zero_validation: bool,
        global_batch_size: int | None,
    ) -> None:
        if not isinstance(trial, self.trial_base):
            raise TypeError(f"the Trainer needs a {self.trial_api}, got {type(trial)}")
        self.trial = trial
        self.context = context
        self.core = context._core
        self.chief = context.distributed.rank == 0
        self.max_length = max_length
        self.searcher_unit = searcher_unit
        self.checkpoint_period = checkpoint_period
        self.validation_period = validation_period
        self.reporting_period = reporting_period
        self.checkpoint_policy = checkpoint_policy
        self.smaller_is_better = smaller_is_better
        self.searcher_metric = searcher_metric
        self.latest_checkpoint = latest_checkpoint
        self.start_from_batch = steps_completed
        self.local_training = local_training
        self.test_mode = test_mode
        self.step_zero_validation = step_zero_validation
        self.global_batch_size = global_batch_size
        self.trial_id = context.get_trial_id()
        self.state = TrialState(trial_id=self.trial_id)
        self.last_metrics: dict[str, Any] | None = None
        self.callbacks: dict[str, PyTorchCallback] = dict(trial.build_callbacks())
        self._check_wrapped()
        by_batch = _overrides(trial, "evaluate_batch", self.trial_base)
        full = _overrides(trial, "evaluate_full_dataset", self.trial_base)
        if by_batch == full:
            raise InvalidExperimentException(
                f"{type(trial).__name__} must define exactly one of evaluate_batch() and "
                "evaluate_full_dataset()"
            )
        self.by_batch = by_batch

    # -- setting up ---------------------------------------------------------------------------

    def _check_wrapped(self) -> None:
        """Refuse a trial that wrapped less than the loop needs."""
        if not self.context.models:
            raise InvalidExperimentException(
                "the trial wrapped no model: call context.wrap_model(model) in its __init__"
            )
        if not self.context.optimizers:
            raise InvalidExperimentException(
                "the trial wrapped no optimizer: call context.wrap_optimizer(optimizer) in its "
                "__init__"
            )

    def _loader(self, built: Any, method: str, *, training: bool, shard: bool) -> Any:
        dist = self.context.distributed
        if isinstance(built, DataLoader):
            return built.get_data_loader(
                repeat=training,
                skip=self.start_from_batch if training else 0,
                num_replicas=dist.size if shard else 1,
                rank=dist.rank if shard else 0,
                seed=self.context._trial_seed or 0,
            )
        if not self.context.experimental._data_repro_checks_disabled:
            raise InvalidExperimentException(repro_problem(method, built))
        return built

    def _set_data_loaders(self) -> None:
        self.training_loader = self._loader(
            self.trial.build_training_data_loader(),
            "build_training_data_loader",
            training=True,
            shard=True,
        )
        try:
            epoch_len = len(self.training_loader)
        except TypeError:
            epoch_len = sys.maxsize
        self.context._epoch_len = self.context.distributed.broadcast(epoch_len)
        self.validation_loader = None
        if self.by_batch or self.chief:
            self.validation_loader = self._loader(
                self.trial.build_validation_data_loader(),
                "build_validation_data_loader",
                training=False,
                shard=self.by_batch,
            )

    def _restore(self) -> None:
        assert self.latest_checkpoint is not None
        log.info("restoring the trial from checkpoint %s", self.latest_checkpoint)
        with self.core.checkpoint.restore_path(self.latest_checkpoint) as path:
            found = _checkpoint.find_state_dict(path)
            if found is not None:
                loaded = _checkpoint.load_state_dict_file(found)
                if isinstance(loaded, dict):
                    _checkpoint.apply_checkpoint(loaded, self.context, self.callbacks)
            saved = _checkpoint.read_trial_state(path)
        self._resume_state(saved)

    def _resume_state(self, saved: dict[str, Any] | None) -> None:
        """The loop's place in training from a checkpoint's ``trial_state.pkl``."""
        if saved is None or saved.get("trial_id") != self.trial_id:
            # Another trial's checkpoint (a warm start, or Determined's): its weights, not its
            # place in training.
            self.state = TrialState(trial_id=self.trial_id)
            return
        if saved.get("epochs_trained") is None:
            saved["epochs_trained"] = saved["batches_trained"] // max(self._epoch_len(), 1)
        known = {k: saved[k] for k in asdict(TrialState()) if k in saved}
        self.state = TrialState(**known)

    def _epoch_len(self) -> int:
        assert self.context._epoch_len is not None
        return self.context._epoch_len

    # -- running ------------------------------------------------------------------------------

    def run(self) -> None:
        with contextlib.ExitStack() as stack:
            for callback in self.callbacks.values():
                callback.on_trial_startup(self.start_from_batch, self.latest_checkpoint)
                stack.callback(callback.on_trial_shutdown)
            self._set_data_loaders()
            # Made before a checkpoint's RNG state is restored: building the iterator must
            # not draw from the generators the checkpoint puts back.
            self.batches = enumerate(self._training_batches(), start=self.start_from_batch)
            stack.callback(self._drop_iterator)
            if self.latest_checkpoint is not None:
                self._restore()
            for callback in self.callbacks.values():
                callback.on_training_start()
            self._run()

    def _training_batches(self) -> Iterator[Any]:
        """What each training batch is handed: here the loader's batches."""
        return _until_exhausted(iter(self.training_loader))

    def _drop_iterator(self) -> None:
        # Ends the loader's worker processes (their shutdown happens when it is collected).
        self.batches = enumerate(())

    def _run(self) -> None:
        try:
            if self.step_zero_validation and self.state.batches_trained == 0:
                self._validate()
            if self.max_length is not None:
                self._train(Batch(1) if self.test_mode else self.max_length, None)
            else:
                for op in self.core.searcher.operations():
                    length = TrainUnit._from_searcher_unit(
                        op.length, self.searcher_unit or "batches", self.global_batch_size
                    )
                    self._train(length, op)
                    metrics = self.last_metrics if self._validation_is_current() else None
                    metrics = metrics if metrics is not None else self._validate()
                    if self.chief:
                        op.report_completed(self._searcher_value(metrics))
            self._finish()
        except ShouldExit as exc:
            if not exc.skip_exit_checkpoint and not self._checkpoint_is_current():
                self._checkpoint(already_exiting=True)
        except InvalidHP:
            if not self._checkpoint_is_current():
                self._checkpoint(already_exiting=True)
            raise

    def _finish(self) -> None:
        if not self._validation_is_current():
            self._validate()
        if not self._checkpoint_is_current():
            self._checkpoint(already_exiting=False)

    def _validation_is_current(self) -> bool:
        return self.state.last_val == self.state.batches_trained

    def _checkpoint_is_current(self) -> bool:
        return self.state.last_ckpt == self.state.batches_trained

    def _remaining(self, length: TrainUnit) -> int:
        assert isinstance(length.value, int), "a training length must be a whole number"
        done = (
            self.state.batches_trained if isinstance(length, Batch) else self.state.epochs_trained
        )
        return length.value - done

    def _train(self, length: TrainUnit, op: SearcherOperation | None) -> None:
        boundaries = [
            (Boundary.TRAIN, length),
            (Boundary.VALIDATE, self.validation_period),
            (Boundary.CHECKPOINT, self.checkpoint_period),
            (Boundary.REPORT, self.reporting_period),
        ]
        while self._remaining(length) > 0:
            reached, batch_metrics = self._train_stretch(boundaries)
            metrics = self._report_training(batch_metrics)
            for callback in self.callbacks.values():
                callback.on_training_workload_end(
                    avg_metrics=metrics["avg_metrics"], batch_metrics=metrics["batch_metrics"]
                )
            progressed = False
            for kind in reached:
                if kind in (Boundary.TRAIN, Boundary.REPORT) and not progressed:
                    self._report_progress(length, op)
                    progressed = True
                elif kind is Boundary.VALIDATE and not self._validation_is_current():
                    self._validate()
                elif kind is Boundary.CHECKPOINT and not self._checkpoint_is_current():
                    self._checkpoint(already_exiting=False)
            self._stop_requested()
            if self.test_mode:
                return

    def _train_stretch(
        self, boundaries: list[tuple[Boundary, TrainUnit]]
    ) -> tuple[list[Boundary], list[dict[str, Any]]]:
        """Train until a boundary is reached: which, and each batch's metrics."""
        if self.chief:
            self.core.train.set_status("training")
        for model in self.context.models:
            model.train()
        self.context.reset_reducers()
        epoch_len = self._epoch_len()
        batch_metrics: list[dict[str, Any]] = []
        for batch_idx, batch in self.batches:
            epoch_idx, in_epoch = divmod(batch_idx, epoch_len)
            self.context._current_batch_idx = batch_idx
            if in_epoch == 0:
                self._on_epoch_start(epoch_idx)
            batch_metrics.append(self._train_batch(batch, epoch_idx, batch_idx))
            self.state.batches_trained += 1
            epoch_ends = in_epoch == epoch_len - 1
            if epoch_ends:
                for callback in self.callbacks.values():
                    callback.on_training_epoch_end(epoch_idx)
                self.state.epochs_trained += 1
            reached = [
                kind
                for kind, unit in boundaries
                if (isinstance(unit, Batch) and unit.should_stop(batch_idx + 1))
                or (isinstance(unit, Epoch) and epoch_ends and unit.should_stop(epoch_idx + 1))
                or (kind is Boundary.TRAIN and self.test_mode)
            ]
            if reached:
                return reached, batch_metrics
        raise RuntimeError(
            "the training data loader ran out of batches; det.pytorch.DataLoader repeats its "
            "data, a loader of your own must too"
        )

    def _on_epoch_start(self, epoch_idx: int) -> None:
        for callback in self.callbacks.values():
            if inspect.signature(callback.on_training_epoch_start).parameters:
                callback.on_training_epoch_start(epoch_idx)
            else:  # before Determined 0.17.8 it took no epoch
                callback.on_training_epoch_start()  # type: ignore[call-arg]

    def _train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
        if self.context.experimental._auto_to_device:
            batch = self.context.to_device(batch)
        metrics = self.trial.train_batch(batch=batch, epoch_idx=epoch_idx, batch_idx=batch_idx)
        amp = self.context._scaler is not None and self.context.experimental._auto_amp
        if amp and self.context._should_communicate_and_update():
            self.context._scaler.update()
        if isinstance(metrics, torch.Tensor):
            metrics = {"loss": metrics}
        if not isinstance(metrics, dict):
            raise TypeError(
                f"train_batch() must return a dict of metrics or a loss tensor, not "
                f"{type(metrics).__name__}"
            )
        for scheduler in self.context.lr_schedulers:
            self._step_lr(batch_idx, scheduler)
        return {name: plain(value) for name, value in metrics.items()}

    def _step_lr(self, batch_idx: int, scheduler: LRScheduler) -> None:
        if not self.context._should_communicate_and_update():
            return
        agg = self.context._aggregation_frequency
        mode, every = scheduler._step_mode, scheduler._frequency
        if mode is LRScheduler.StepMode.STEP_EVERY_BATCH:
            for i in range(batch_idx - agg + 1, batch_idx + 1):
                if (i + 1) % every == 0:
                    scheduler.step()
        elif mode is LRScheduler.StepMode.STEP_EVERY_OPTIMIZER_STEP:
            if (batch_idx + 1) % every == 0:
                scheduler.step()
        elif mode is LRScheduler.StepMode.STEP_EVERY_EPOCH:
            # Step when the next optimizer step falls in the next epoch.
            epoch = batch_idx // self._epoch_len()
            following = (batch_idx + agg) // self._epoch_len()
            for e in range(epoch, following):
                if (e + 1) % every == 0:
                    scheduler.step()

    # -- reporting ----------------------------------------------------------------------------

    def _report_training(self, batch_metrics: list[dict[str, Any]]) -> dict[str, Any]:
        """Every rank's batch metrics averaged per batch across ranks, then over the batches,
        with the training reducers; reported by the chief; the same on every rank."""
        dist = self.context.distributed
        if dist.size > 1:
            gathered = dist.gather(batch_metrics)
            if gathered is not None:
                batch_metrics = average_across_ranks(gathered)
        names = list(dict.fromkeys(k for m in batch_metrics for k in m))
        avg = {name: mean_or_none([m.get(name) for m in batch_metrics]) for name in names}
        avg.update(self.context.reduce_metrics(for_training=True))
        if self.chief:
            report = dict(avg)
            report.setdefault("batches", self.state.batches_trained)
            report.setdefault("epochs", self.state.epochs_trained)
            self.core.train.report_training_metrics(
                steps_completed=self.state.batches_trained,
                metrics=report,
                batch_metrics=batch_metrics,
            )
        result: dict[str, Any] = dist.broadcast(
            {"avg_metrics": avg, "batch_metrics": batch_metrics}
        )
        return result

    def _report_progress(self, length: TrainUnit, op: SearcherOperation | None) -> None:
        if not self.chief:
            return
        done = (
            self.state.batches_trained if isinstance(length, Batch) else self.state.epochs_trained
        )
        assert isinstance(length.value, int)
        if op is not None:
            op.report_progress(done)
        else:
            self.core.train.report_progress(min(1.0, done / max(length.value, 1)))

    def _stop_requested(self) -> None:
        if self.core.preempt.should_preempt() or self.context.get_stop_requested():
            raise ShouldExit()

    # -- validating ---------------------------------------------------------------------------

    @torch.no_grad()
    def _validate(self) -> dict[str, Any]:
        if self.chief:
            self.core.train.set_status("validating")
        self.context.reset_reducers()
        for model in self.context.models:
            model.eval()
        started = time.monotonic()
        for callback in self.callbacks.values():
            callback.on_validation_start()
        metrics: dict[str, Any] = {}
        if self.by_batch:
            metrics = self._validate_by_batch()
        elif self.chief:
            assert self.validation_loader is not None
            full = self.trial.evaluate_full_dataset(data_loader=self.validation_loader)
            if not isinstance(full, dict):
                raise TypeError(
                    f"evaluate_full_dataset() must return a dict, not {type(full).__name__}"
                )
            metrics = {name: plain(value) for name, value in full.items()}
        metrics.update(self.context.reduce_metrics(for_training=False))
        if self.context.distributed.size > 1:
            metrics = self.context.distributed.broadcast(metrics)
        for callback in self.callbacks.values():
            callback.on_validation_end(metrics)
        self.state.last_val = self.state.batches_trained
        self.last_metrics = metrics
        should_checkpoint = False
        if self.chief:
            log.info("validated in %.2fs: %s", time.monotonic() - started, metrics)
            best_before = None
            if self.checkpoint_policy == "best" and not self.local_training:
                best_before = self.core.train.get_experiment_best_validation()
            report = dict(metrics)
            report.setdefault("batches", self.state.batches_trained)
            report.setdefault("epochs", self.state.epochs_trained)
            self.core.train.report_validation_metrics(
                steps_completed=self.state.batches_trained, metrics=report
            )
            if not self._checkpoint_is_current():
                if self.checkpoint_policy == "all":
                    should_checkpoint = True
                elif self.checkpoint_policy == "best" and self.searcher_metric:
                    now = self._searcher_value(metrics)
                    should_checkpoint = best_before is None or (
                        now < best_before if self.smaller_is_better else now > best_before
                    )
        if self.context.distributed.broadcast(should_checkpoint):
            self._checkpoint(already_exiting=False)
        return metrics

    def _validate_by_batch(self) -> dict[str, Any]:
        for callback in self.callbacks.values():
            callback.on_validation_epoch_start()
        batch_metrics: list[dict[str, Any]] = []
        keys: list[str] | None = None
        for out in self._validation_outputs():
            if not isinstance(out, dict):
                raise TypeError(f"evaluate_batch() must return a dict, not {type(out).__name__}")
            if keys is None:
                keys = list(out)
            elif set(keys) != set(out):
                raise ValueError(
                    f"evaluate_batch() must return the same metrics for every batch: {sorted(keys)}"
                    f" != {sorted(out)}"
                )
            batch_metrics.append({name: plain(value) for name, value in out.items()})
            if self.test_mode:
                break
        for callback in self.callbacks.values():
            callback.on_validation_epoch_end(batch_metrics)
        keys = keys or []
        reducers = _reducers(self.trial.evaluation_reducer(), keys)
        mine = {
            name: reduce_values(reducers[name], [m[name] for m in batch_metrics])
            for name in keys
            if batch_metrics
        }
        dist = self.context.distributed
        if dist.size == 1:
            if not batch_metrics:
                raise RuntimeError("the validation data loader yielded no batches")
            return mine
        gathered = dist.gather((mine, len(batch_metrics)))
        if gathered is None:
            return {}
        parts = [(m, n) for m, n in gathered if n]
        if not parts:
            raise RuntimeError("the validation data loader yielded no batches on any rank")
        names = list(parts[0][0])
        return {
            name: reduce_values(
                reducers.get(name, Reducer.AVG),
                [m[name] for m, _ in parts],
                [n for _, n in parts],
            )
            for name in names
        }

    def _validation_outputs(self) -> Iterator[Any]:
        """``evaluate_batch``'s result for each validation batch this rank reports."""
        assert self.validation_loader is not None
        takes_idx = "batch_idx" in inspect.signature(self.trial.evaluate_batch).parameters
        for idx, loaded in enumerate(self.validation_loader):
            batch = (
                self.context.to_device(loaded)
                if self.context.experimental._auto_to_device
                else loaded
            )
            if takes_idx:
                yield self.trial.evaluate_batch(batch=batch, batch_idx=idx)
            else:
                yield self.trial.evaluate_batch(batch=batch)  # type: ignore[call-arg]

    def _searcher_value(self, metrics: dict[str, Any] | None) -> float:
        name = self.searcher_metric
        if not metrics or name not in metrics:
            raise RuntimeError(
                f"the searcher's metric {name!r} is not among the validation metrics "
                f"{sorted(metrics or {})}: return it from evaluate_batch() or "
                "evaluate_full_dataset(), or change searcher.metric"
            )
        value = metrics[name]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise RuntimeError(f"the searcher's metric {name!r} must be a number, got {value!r}")
        return float(value)

    # -- checkpointing ------------------------------------------------------------------------

    def _checkpoint(self, already_exiting: bool) -> None:
        if self.chief:
            self.core.train.set_status("checkpointing")
        self.state.last_ckpt = self.state.batches_trained
        try:
            metadata = {
                "determined_version": __version__,
                "steps_completed": self.state.batches_trained,
                "framework": f"torch-{torch.__version__}",
                "format": "pickle",
            }
            uuid = self._store_checkpoint(metadata)
            for callback in self.callbacks.values():
                callback.on_checkpoint_upload_end(uuid=uuid)
        except InvalidHP:
            if not already_exiting:
                self.core.train.report_early_exit(EarlyExitReason.INVALID_HP)
                raise ShouldExit(skip_exit_checkpoint=True) from None
            raise

    def _store_checkpoint(self, metadata: dict[str, Any]) -> str:
        """Write and store a checkpoint (the chief alone, here); its uuid, on every rank."""
        uuid = ""
        if self.chief:
            with self.core.checkpoint.store_path(metadata) as (path, storage_id):
                _checkpoint.save_checkpoint(
                    path,
                    self.context,
                    self.callbacks,
                    asdict(self.state),
                    self.trial,
                    on_cluster=not self.local_training,
                )
                uuid = storage_id
        result: str = self.context.distributed.broadcast(uuid)
        return result


def _until_exhausted(iterator: Iterator[Any]) -> Iterator[Any]:
    yield from iterator


def _reducers(reducer: Reducer | dict[str, Reducer], keys: list[str]) -> dict[str, Reducer]:
    if isinstance(reducer, dict):
        if set(reducer) != set(keys):
            raise InvalidExperimentException(
                f"evaluation_reducer() must give one reducer, or one for every validation metric "
                f"{sorted(keys)}; it gave {sorted(reducer)}"
            )
        chosen = dict(reducer)
    else:
        chosen = {key: reducer for key in keys}
    for key, value in chosen.items():
        if not isinstance(value, Reducer):
            raise InvalidExperimentException(
                f"evaluation_reducer() for {key!r} must be a det.pytorch.Reducer, got {value!r}"
            )
    return chosen
