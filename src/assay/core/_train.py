"""``ctx.train``: report metrics, progress and early exits.

In a distributed trial only the chief (rank 0) reports; on the other ranks the report calls
check their arguments and do nothing, so the same code runs on every rank.
"""

from __future__ import annotations

import enum
import logging
import math
import os
import time
from pathlib import Path
from typing import Any

from assay.core._distributed import DistributedContext
from assay.core._session import MasterSession, Reporter
from assay.errors import AssayError
from assay.protocol import (
    TRAINING,
    VALIDATION,
    EarlyExitReport,
    ExitedReason,
    MetricReport,
    ProgressReport,
    TrialEnv,
)

log = logging.getLogger("assay.core")


class EarlyExitReason(enum.Enum):
    """Why a trial stops before its searcher is done with it."""

    INVALID_HP = ExitedReason.INVALID_HP.value
    """These hyperparameters cannot work: the searcher replaces the trial (it does not count
    toward ``max_trials``)."""
    USER_REQUESTED_STOP = ExitedReason.USER_CANCELED.value


class InvalidHP(AssayError):
    """Raised by training code, inside ``with assay.core.init() as ctx:``, when its
    hyperparameters cannot work (Determined's ``det.InvalidHP``).

    The context reports :attr:`EarlyExitReason.INVALID_HP` and swallows the exception, so the
    process ends normally and the searcher replaces the trial without counting it.
    """

    def __init__(self, message: str = "") -> None:
        # The reason is optional, as with ``det.InvalidHP()``.
        super().__init__(message)


def _check(steps_completed: int, metrics: dict[str, Any]) -> None:
    if isinstance(steps_completed, bool) or not isinstance(steps_completed, int):
        raise TypeError(f"steps_completed must be an int, got {type(steps_completed).__name__}")
    if steps_completed < 0:
        raise ValueError(f"steps_completed must be >= 0, got {steps_completed}")
    if not isinstance(metrics, dict):
        raise TypeError(f"metrics must be a dict, got {type(metrics).__name__}")


def _plain(value: Any) -> Any:
    """Numbers from numpy or torch scalars become Python numbers the report can carry."""
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    item = getattr(value, "item", None)
    if callable(item):
        try:
            return item()
        except (TypeError, ValueError):
            pass
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return str(value)


class TrainContext:
    def __init__(
        self,
        session: MasterSession | None,
        trial_id: int | None,
        experiment_id: int | None,
        distributed: DistributedContext | None = None,
    ) -> None:
        self._session = session
        self._trial_id = trial_id
        self._experiment_id = experiment_id
        self._chief = (distributed or DistributedContext()).rank == 0
        self._reporter = (
            Reporter(session, trial_id)
            if session is not None and trial_id is not None and self._chief
            else None
        )

    def report_metrics(self, group: str, steps_completed: int, metrics: dict[str, Any]) -> None:
        """Report ``metrics`` of ``group`` at ``steps_completed`` (returns at once; sent in the
        background). Reporting the same group and step twice in one run keeps the first."""
        self._report(group, steps_completed, metrics)

    def _report(
        self, group: str, steps_completed: int, metrics: dict[str, Any], final: bool = False
    ) -> None:
        _check(steps_completed, metrics)
        if not self._chief:
            return
        values = {str(k): _plain(v) for k, v in metrics.items()}
        if self._reporter is None:
            log.info("%s metrics at step %d: %s", group, steps_completed, values)
            return
        report = MetricReport(group, steps_completed, values, time.time(), final)
        self._reporter.put(report.to_dict())

    def report_training_metrics(
        self,
        steps_completed: int,
        metrics: dict[str, Any],
        batch_metrics: list[dict[str, Any]] | None = None,
    ) -> None:
        del batch_metrics  # per-batch detail is not stored; the aggregate is
        self.report_metrics(TRAINING, steps_completed, metrics)

    def report_validation_metrics(
        self, steps_completed: int, metrics: dict[str, Any], *, final: bool = False
    ) -> None:
        """Report validation ``metrics`` at ``steps_completed``. ``final``: they are the
        trial's final result (NNI's ``report_final_result``); an NNI experiment ranks its
        trials by their final results alone, as NNI does."""
        self._report(VALIDATION, steps_completed, metrics, final)

    def report_progress(self, progress: float) -> None:
        """Fraction of the trial done, from 0.0 to 1.0 (shown in the CLI and UI)."""
        if not 0.0 <= float(progress) <= 1.0 or math.isnan(progress):
            raise ValueError(f"progress must be between 0 and 1, got {progress}")
        if self._session is None or not self._chief:
            return
        path = f"/api/v1/trials/{self._trial_id}/progress"
        body = ProgressReport(float(progress)).to_dict()
        self._session.call(lambda h: h.post(path, body))

    def report_early_exit(self, reason: EarlyExitReason) -> None:
        """Tell the searcher why this trial is about to stop on its own (from the chief)."""
        if not self._chief:
            return
        if self._session is None:
            log.info("early exit: %s", reason.name)
            return
        path = f"/api/v1/trials/{self._trial_id}/early_exit"
        body = EarlyExitReport(reason.value).to_dict()
        self._session.call(lambda h: h.post(path, body))

    def get_experiment_best_validation(self) -> float | None:
        """The best searcher metric any trial of the experiment has reported, this one's
        reports so far included (they are delivered first)."""
        if self._session is None:
            return None
        self._flush()
        path = f"/api/v1/experiments/{self._experiment_id}/searcher/best_validation"
        value = self._session.call(lambda h: h.get(path))["best_validation"]
        return None if value is None else float(value)

    def get_tensorboard_path(self) -> Path:
        """The directory to write TensorBoard event files into (made if missing).

        On a cluster it is the run's own directory on its agent; the chief's files are copied
        to checkpoint storage as they appear, and once more when the context closes, for
        ``assay tensorboard start``. Off a cluster: ``./tensorboard``."""
        path = Path(os.environ.get(TrialEnv.TENSORBOARD_DIR) or "tensorboard").absolute()
        path.mkdir(parents=True, exist_ok=True)
        return path

    def set_status(self, status: str) -> None:
        log.info("status: %s", status)

    def _flush(self) -> None:
        if self._reporter is not None:
            self._reporter.flush()

    def _close(self) -> None:
        if self._reporter is not None:
            self._reporter.flush()
            self._reporter.close()
