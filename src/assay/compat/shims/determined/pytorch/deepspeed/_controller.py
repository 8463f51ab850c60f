"""The training loop of a ``DeepSpeedTrial``: the PyTorch loop (lengths, periods, searcher
operations, preemption, reports) with DeepSpeed's batching and checkpoints.

Where it differs from a ``PyTorchTrial``'s: ``train_batch`` and ``evaluate_batch`` are handed
the loader's iterator, not a batch, and ``train_batch`` runs once per micro batch (the engine's
``gradient_accumulation_steps`` of them make a batch); data is loaded, sharded and reported
as the model parallel unit says; every rank writes its part of a checkpoint (the engines'
``save_checkpoint`` and its ``det_state_dict_rank{N}.pth``), committed as one."""

from __future__ import annotations

import inspect
import itertools
import json
import logging
import pathlib
import pickle
import sys
from collections.abc import Iterator
from dataclasses import asdict
from typing import Any, cast

import torch

from ..._code import copy_code
from .. import _checkpoint
from .._context import InvalidExperimentException
from .._controller import TrialController
from .._data import DataLoader, repro_problem
from .._reducer import mean_or_none, plain
from ._context import DeepSpeedTrialContext
from ._trial import DeepSpeedTrial

log = logging.getLogger("determined.pytorch")

RAN_OUT = (
    "the training data loader ran out of batches; det.pytorch.DataLoader repeats its data, a "
    "loader of your own must too"
)


def _length(loader: Any) -> int | None:
    try:
        return len(loader)
    except TypeError:
        # DeepSpeed's RepeatingLoader has no length; the loader it repeats has.
        inner = getattr(loader, "loader", None)
        try:
            return len(inner) if inner is not None else None
        except TypeError:
            return None


class DeepSpeedTrialController(TrialController):
    """Runs one ``DeepSpeedTrial``'s training (see :class:`TrialController`)."""

    trial_base = DeepSpeedTrial
    trial_api = "det.pytorch.deepspeed.DeepSpeedTrial"

    def __init__(
        self, trial: DeepSpeedTrial, context: DeepSpeedTrialContext, **kwargs: Any
    ) -> None:
        self.ds_trial = trial
        self.ds_context = context
        self.training_iterator: Iterator[Any] | None = None
        self.num_validation_batches = 0
        # The PyTorch loop calls the trial's methods by the names both APIs share.
        super().__init__(cast(Any, trial), context, **kwargs)

    def _check_wrapped(self) -> None:
        if not self.ds_context.models:
            raise InvalidExperimentException(
                "the trial wrapped no model engine: call context.wrap_model_engine(engine) "
                "with the engine deepspeed.initialize() made, in its __init__"
            )

    # -- data -------------------------------------------------------------------------------

    def _ds_loader(self, built: Any, method: str, *, training: bool, shard: bool) -> Any:
        mpu = self.ds_context._mpu
        if isinstance(built, DataLoader):
            # A batch is gradient_accumulation_steps micro batches of the loader.
            skip = self.start_from_batch * self.ds_context.get_num_micro_batches_per_slot()
            return built.get_data_loader(
                repeat=training,
                skip=skip if training else 0,
                num_replicas=mpu.data_parallel_world_size if shard else 1,
                rank=mpu.data_parallel_rank if shard else 0,
                seed=self.context._trial_seed or 0,
            )
        if not self.context.experimental._data_repro_checks_disabled:
            raise InvalidExperimentException(repro_problem(method, built))
        return built

    def _set_data_loaders(self) -> None:
        ctx = self.ds_context
        micro = ctx.get_num_micro_batches_per_slot()
        self.training_loader = None
        self.validation_loader = None
        train_len: int | None = None
        val_len: int | None = None
        # Middle pipeline stages take their input from the previous stage, not from data.
        if ctx._mpu.should_build_data_loader:
            self.training_loader = self._ds_loader(
                self.ds_trial.build_training_data_loader(),
                "build_training_data_loader",
                training=True,
                shard=True,
            )
            train_len = _length(self.training_loader)
            if self.by_batch or self.chief:
                self.validation_loader = self._ds_loader(
                    self.ds_trial.build_validation_data_loader(),
                    "build_validation_data_loader",
                    training=False,
                    shard=self.by_batch,
                )
                val_len = _length(self.validation_loader)
                if val_len is not None and ctx.use_pipeline_parallel:
                    # A PipelineEngine's eval_batch draws a batch of micro batches.
                    if val_len < micro:
                        raise InvalidExperimentException(
                            f"the validation data loader has {val_len} micro batches, fewer "
                            f"than the {micro} gradient accumulation steps a pipeline "
                            "engine evaluates at once"
                        )
                    val_len //= micro
        lengths = self.context.distributed.allgather((train_len, val_len))
        trains = [n for n, _ in lengths if n is not None]
        vals = [n for _, n in lengths if n is not None]
        if trains and min(trains) != max(trains):
            log.warning("the training data loaders' lengths differ across ranks: using the least")
        # Epochs count batches of gradient_accumulation_steps micro batches.
        self.context._epoch_len = max(min(trains) // micro, 1) if trains else sys.maxsize
        if vals and min(vals) != max(vals):
            log.warning("the validation data loaders' lengths differ across ranks: using the least")
        self.num_validation_batches = min(vals) if vals else 0

    def _training_batches(self) -> Iterator[Any]:
        self.training_iterator = (
            iter(self.training_loader) if self.training_loader is not None else None
        )
        return itertools.repeat(None)

    def _drop_iterator(self) -> None:
        super()._drop_iterator()
        self.training_iterator = None

    # -- training ---------------------------------------------------------------------------

    def _train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
        del batch  # the trial draws its micro batches from the iterator
        ctx = self.ds_context
        micro = ctx.get_num_micro_batches_per_slot()
        calls = 1 if ctx.use_pipeline_parallel or ctx._manual_grad_accumulation else micro
        reported: list[dict[str, Any]] = []
        for _ in range(calls):
            try:
                metrics = self.ds_trial.train_batch(self.training_iterator, epoch_idx, batch_idx)
            except StopIteration:
                raise RuntimeError(RAN_OUT) from None
            if not ctx._mpu.should_report_metrics:
                continue
            if isinstance(metrics, torch.Tensor):
                metrics = {"loss": metrics}
            if not isinstance(metrics, dict):
                raise TypeError(
                    f"train_batch() must return a dict of metrics or a loss tensor, not "
                    f"{type(metrics).__name__}"
                )
            reported.append({name: plain(value) for name, value in metrics.items()})
        engine = ctx.models[0]
        if not ctx.use_pipeline_parallel and engine.micro_steps % micro != 0:
            raise RuntimeError(
                f"model engine 0 has taken {engine.micro_steps} micro steps, not a whole number "
                f"of batches of {micro} (gradient_accumulation_steps): with "
                "disable_auto_grad_accumulation(), train_batch must call engine.step() for "
                "every micro batch"
            )
        # The micro batches' mean: every batch has as many, so the mean over batches is theirs.
        names = list(dict.fromkeys(k for m in reported for k in m))
        return {name: mean_or_none([m.get(name) for m in reported]) for name in names}

    # -- validating -------------------------------------------------------------------------

    def _validation_outputs(self) -> Iterator[Any]:
        iterator = iter(self.validation_loader) if self.validation_loader is not None else None
        evaluate = self.ds_trial.evaluate_batch
        takes_idx = "batch_idx" in inspect.signature(evaluate).parameters
        for idx in range(self.num_validation_batches):
            # Determined once called it without the batch's index.
            out = evaluate(iterator, batch_idx=idx) if takes_idx else evaluate(iterator)  # type: ignore[call-arg]
            if self.ds_context._mpu.should_report_metrics:
                yield out

    # -- checkpoints ------------------------------------------------------------------------

    def _store_checkpoint(self, metadata: dict[str, Any]) -> str:
        # Every rank writes its part (DeepSpeed's engines save collectively); the chief
        # commits the union as one checkpoint.
        with self.core.checkpoint.store_path(metadata, shard=True) as (path, storage_id):
            self._save(path)
        return storage_id

    def _save(self, path: pathlib.Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        dist = self.context.distributed
        if self.chief:
            if not self.local_training:
                copy_code(pathlib.Path.cwd(), path / "code")
            with (path / "trial_state.pkl").open("wb") as f:
                pickle.dump(asdict(self.state), f)
        state: dict[str, Any] = {
            "callbacks": {name: cb.state_dict() for name, cb in self.callbacks.items()},
            "rng_state": _checkpoint.rng_state(dist.local_rank),
        }
        for callback in self.callbacks.values():
            callback.on_checkpoint_save_start(state)
        torch.save(state, str(path / f"det_state_dict_rank{dist.rank}.pth"))
        self.ds_trial.save(self.ds_context, path)
        if self.chief:
            try:
                exp_conf: dict[str, Any] | None = self.context.get_experiment_config()
                hparams: dict[str, Any] | None = self.context.get_hparams()
            except ValueError:
                exp_conf = hparams = None
            cls = type(self.ds_trial)
            load_data = {
                "trial_type": "DeepSpeedTrial",
                "experiment_config": exp_conf,
                "hparams": hparams,
                "trial_cls_spec": f"{cls.__module__}:{cls.__qualname__}",
            }
            (path / "load_data.json").write_text(json.dumps(load_data, default=str))
        for callback in self.callbacks.values():
            callback.on_checkpoint_end(str(path))
            callback.on_checkpoint_write_end(str(path))

    def _restore(self) -> None:
        assert self.latest_checkpoint is not None
        log.info("restoring the trial from checkpoint %s", self.latest_checkpoint)
        rank = self.context.distributed.rank
        with self.core.checkpoint.restore_path(self.latest_checkpoint) as path:
            # A rank the saving run did not have takes the chief's callbacks and RNG state.
            candidates = [path / f"det_state_dict_rank{r}.pth" for r in (rank, 0)]
            found = next((p for p in candidates if p.exists()), None)
            found = found or _checkpoint.find_state_dict(path)
            state = _checkpoint.load_state_dict_file(found) if found is not None else None
            if not isinstance(state, dict):
                state = None
                log.warning("the checkpoint has no det_state_dict_rank%d.pth to restore", rank)
            if state is not None:
                for callback in self.callbacks.values():
                    callback.on_checkpoint_load_start(state)
            self.ds_trial.load(self.ds_context, path)
            if state is not None:
                if "rng_state" in state:
                    _checkpoint.set_rng_state(
                        state["rng_state"], self.context.distributed.local_rank
                    )
                saved_callbacks = state.get("callbacks") or {}
                for name, callback in self.callbacks.items():
                    if name in saved_callbacks:
                        callback.load_state_dict(saved_callbacks[name])
            saved = _checkpoint.read_trial_state(path)
        self._resume_state(saved)
