"""``assay.core.init()``: the context a training script works through."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from types import TracebackType
from typing import Any

from assay.core._checkpoint import CheckpointContext
from assay.core._distributed import DistributedContext, from_environment
from assay.core._info import get_cluster_info
from assay.core._preempt import PreemptContext, PreemptMode
from assay.core._searcher import SearcherContext
from assay.core._session import MasterSession
from assay.core._tensorboard import TensorBoardUploader
from assay.core._train import EarlyExitReason, InvalidHP, TrainContext
from assay.errors import AssayError, StorageError, one_line
from assay.protocol import ClusterInfo, TrialEnv, failure_line

log = logging.getLogger("assay.core")


class Context:
    """Everything a trial talks to: ``train``, ``checkpoint``, ``preempt``, ``searcher``,
    ``distributed`` and ``info`` (None off-cluster). Use it as a context manager so pending
    reports are delivered before the process exits."""

    def __init__(
        self,
        *,
        info: ClusterInfo | None,
        train: TrainContext,
        checkpoint: CheckpointContext,
        preempt: PreemptContext,
        searcher: SearcherContext,
        distributed: DistributedContext,
        session: MasterSession | None,
        tensorboard: TensorBoardUploader | None = None,
    ) -> None:
        self.info = info
        self.train = train
        self.checkpoint = checkpoint
        self.preempt = preempt
        self.searcher = searcher
        self.distributed = distributed
        self._session = session
        self._tensorboard = tensorboard
        self._closed = False

    def __enter__(self) -> Context:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        if isinstance(exc, InvalidHP):
            log.warning("invalid hyperparameters: %s", str(exc) or "no reason given")
            try:
                self.train.report_early_exit(EarlyExitReason.INVALID_HP)
            finally:
                self.close()
            return True
        if isinstance(exc, StorageError) and self.info is not None:
            # The storage is checked here, by the trial (the master does not contact a server
            # the submitter chose): its problem becomes the trial's message, in one line.
            print(failure_line(_storage_problem(exc)), file=sys.stderr, flush=True)
        self.close()
        return False

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.preempt.close()
        try:
            if self._tensorboard is not None:
                self._tensorboard.close()
            self.train._close()
        finally:
            self.distributed.close()
            if self._session is not None:
                self._session.http.close()


def _storage_problem(exc: StorageError) -> str:
    """What is wrong with the checkpoint storage, naming the config key at fault."""
    key = exc.details[0].path if exc.details and exc.details[0].path else ""
    where = f"checkpoint_storage.{key}" if key else "checkpoint_storage"
    return f"{where}: {one_line(exc)}"


def init(
    *,
    distributed: DistributedContext | None = None,
    checkpoint_storage: str | dict[str, Any] | None = None,
    preempt_mode: PreemptMode = PreemptMode.WorkersAskChief,
    tensorboard_mode: Any = None,
    async_checkpointing: bool = False,
) -> Context:
    """Connect this process to its trial, or, run outside a cluster, to local stand-ins:
    checkpoints go to ``checkpoint_storage`` (a directory, default ``./checkpoints``), metrics
    to the log, and the searcher yields one operation.

    In a distributed trial (``WORLD_SIZE`` > 1, as the agent and ``torchrun`` set it) the ranks
    meet here, unless a ``distributed`` context is passed: this returns once all of them have
    connected to the chief. Only the chief reports metrics and checkpoints and talks to the
    searcher; see ``preempt_mode`` for ``should_preempt()``."""
    del tensorboard_mode, async_checkpointing
    info = get_cluster_info()
    distributed = distributed or from_environment() or DistributedContext()
    if info is None or info.trial is None:
        return _offcluster(distributed, checkpoint_storage, preempt_mode)
    session = MasterSession(info.master_url, info.session_token)
    trial = info.trial
    storage = _storage_config(checkpoint_storage) or info.checkpoint_storage
    if storage is None:
        raise RuntimeError("the cluster gave this trial no checkpoint storage")
    train = TrainContext(session, trial.trial_id, trial.experiment_id, distributed)
    uploader = _tensorboard_uploader(storage, trial.experiment_id, trial.trial_id, distributed)
    return Context(
        info=info,
        train=train,
        checkpoint=CheckpointContext(
            session, trial.trial_id, storage, on_report=train._flush, distributed=distributed
        ),
        preempt=PreemptContext(session, info.allocation_id, distributed, preempt_mode),
        searcher=SearcherContext(
            session, trial.trial_id, distributed=distributed, on_complete=train._flush
        ),
        distributed=distributed,
        session=session,
        tensorboard=uploader,
    )


def _tensorboard_uploader(
    storage: dict[str, Any], experiment_id: int, trial_id: int, distributed: DistributedContext
) -> TensorBoardUploader | None:
    """The chief's uploader of the run's TensorBoard directory (started), or None where there
    is nothing to upload from or to."""
    local = os.environ.get(TrialEnv.TENSORBOARD_DIR)
    if not local or distributed.rank != 0:
        return None
    from assay.storage import FileStore, storage_from_config, tensorboard_key

    try:
        manager = storage_from_config(storage)
    except AssayError as exc:
        log.warning("TensorBoard files will not be uploaded: %s", exc)
        return None
    if not isinstance(manager, FileStore):
        log.warning(
            "TensorBoard files will not be uploaded: %s storage does not keep them",
            type(manager).__name__,
        )
        return None
    Path(local).mkdir(parents=True, exist_ok=True)
    uploader = TensorBoardUploader(Path(local), manager, tensorboard_key(experiment_id, trial_id))
    uploader.start()
    return uploader


def _storage_config(value: str | dict[str, Any] | None) -> dict[str, Any] | None:
    if value is None:
        return None
    if isinstance(value, dict):
        return value
    return {"type": "shared_fs", "host_path": str(Path(value).resolve())}


def _offcluster(
    distributed: DistributedContext,
    checkpoint_storage: str | dict[str, Any] | None,
    preempt_mode: PreemptMode,
) -> Context:
    storage = _storage_config(checkpoint_storage) or _storage_config(
        os.environ.get("ASSAY_CHECKPOINT_DIR", "checkpoints")
    )
    assert storage is not None
    log.info(
        "running outside a cluster: checkpoints in %s, metrics logged", storage.get("host_path")
    )
    length = int(os.environ.get("ASSAY_OFFCLUSTER_LENGTH", "1"))
    return Context(
        info=None,
        train=TrainContext(None, None, None, distributed),
        checkpoint=CheckpointContext(None, None, storage, distributed=distributed),
        preempt=PreemptContext(None, "", distributed, preempt_mode),
        searcher=SearcherContext(None, None, length, distributed),
        distributed=distributed,
        session=None,
    )
