"""Trials as Determined's clients read them (``trialv1Trial``, ``v1GetTrialResponse``,
``v1GetExperimentTrialsResponse``, ``v1GetTrialWorkloadsResponse``), and the pure conversions
from assay's trial, reports and checkpoints to them.

assay keeps a trial's reports by group and its checkpoints by uuid; Determined shows both as a
trial's "workloads" (one training, validation or checkpoint entry each) and folds every report
into "summary metrics". Those are made here, from assay's shapes alone, so every route that
shows a trial (describe, the experiment's trial list, the SDK's ``Trial``) shows the same.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import Any

from pydantic import Field

from assay import rest
from assay.protocol import CheckpointState, TrialState
from assay.rest.determined._checkpoints import CheckpointState as DetCheckpointState
from assay.rest.determined._checkpoints import Metrics, checkpoint_state
from assay.rest.determined._common import DetResource, Pagination, timestamp


class DetTrialState(StrEnum):
    """``trialv1State``: assay's trial states with Determined's prefix; assay's WAITING (held
    by its searcher, asking for no slots) is Determined's plain ACTIVE."""

    UNSPECIFIED = "STATE_UNSPECIFIED"
    ACTIVE = "STATE_ACTIVE"
    PAUSED = "STATE_PAUSED"
    STOPPING_CANCELED = "STATE_STOPPING_CANCELED"
    STOPPING_KILLED = "STATE_STOPPING_KILLED"
    STOPPING_COMPLETED = "STATE_STOPPING_COMPLETED"
    STOPPING_ERROR = "STATE_STOPPING_ERROR"
    CANCELED = "STATE_CANCELED"
    COMPLETED = "STATE_COMPLETED"
    ERROR = "STATE_ERROR"
    QUEUED = "STATE_QUEUED"
    PULLING = "STATE_PULLING"
    STARTING = "STATE_STARTING"
    RUNNING = "STATE_RUNNING"

    @classmethod
    def of(cls, state: TrialState) -> DetTrialState:
        if state == TrialState.WAITING:
            return cls.ACTIVE
        return cls(f"STATE_{state.value}")

    @property
    def active(self) -> bool:
        """Whether it is ACTIVE or one of the states Determined counts as parts of ACTIVE."""
        return self in _ACTIVE


_ACTIVE = (
    DetTrialState.ACTIVE,
    DetTrialState.QUEUED,
    DetTrialState.PULLING,
    DetTrialState.STARTING,
    DetTrialState.RUNNING,
)


class MetricsWorkload(DetResource):
    """``v1MetricsWorkload``: one training or validation report."""

    metrics: Metrics
    num_inputs: int = Field(default=0, description="assay does not count inputs.")
    total_batches: int
    end_time: str | None = None


class CheckpointWorkload(DetResource):
    """``v1CheckpointWorkload``: one checkpoint, as a step of its trial."""

    uuid: str | None = None
    state: DetCheckpointState
    total_batches: int
    end_time: str | None = None
    metadata: dict[str, Any] | None = None
    resources: dict[str, str] | None = Field(
        default=None, description="File sizes by path, as strings (protobuf's int64 in JSON)."
    )


class WorkloadContainer(DetResource):
    """``v1WorkloadContainer``: exactly one of the three."""

    training: MetricsWorkload | None = None
    validation: MetricsWorkload | None = None
    checkpoint: CheckpointWorkload | None = None


class Trial(DetResource):
    """``trialv1Trial``."""

    id: int
    experiment_id: int
    start_time: str = Field(description="When it was created, RFC 3339 (Determined's too).")
    end_time: str | None = None
    state: DetTrialState
    restarts: int
    hparams: dict[str, Any]
    total_batches_processed: int
    best_validation: MetricsWorkload | None = None
    latest_validation: MetricsWorkload | None = None
    best_checkpoint: CheckpointWorkload | None = None
    runner_state: str | None = None
    wall_clock_time: float | None = Field(
        default=None, description="Seconds its finished runs ran, in all."
    )
    warm_start_checkpoint_uuid: str | None = None
    task_id: str | None = None
    task_ids: list[str] | None = None
    searcher_metric_value: float | None = None
    summary_metrics: dict[str, Any] | None = None
    checkpoint_count: int | None = None
    total_checkpoint_size: str | None = None
    metadata: dict[str, Any] | None = None


class GetTrialResponse(DetResource):
    """``GET /api/v1/trials/{trialId}``."""

    trial: Trial


class GetExperimentTrialsResponse(DetResource):
    """``GET /api/v1/experiments/{experimentId}/trials``: a page of the experiment's trials."""

    trials: list[Trial]
    pagination: Pagination


class GetTrialWorkloadsResponse(DetResource):
    """``GET /api/v1/trials/{trialId}/workloads``: a page of the trial's workloads."""

    workloads: list[WorkloadContainer]
    pagination: Pagination


class TrialSortBy(StrEnum):
    """``v1GetExperimentTrialsRequestSortBy``."""

    UNSPECIFIED = "SORT_BY_UNSPECIFIED"
    ID = "SORT_BY_ID"
    START_TIME = "SORT_BY_START_TIME"
    END_TIME = "SORT_BY_END_TIME"
    STATE = "SORT_BY_STATE"
    BEST_VALIDATION_METRIC = "SORT_BY_BEST_VALIDATION_METRIC"
    LATEST_VALIDATION_METRIC = "SORT_BY_LATEST_VALIDATION_METRIC"
    BATCHES_PROCESSED = "SORT_BY_BATCHES_PROCESSED"
    DURATION = "SORT_BY_DURATION"
    RESTARTS = "SORT_BY_RESTARTS"
    CHECKPOINT_SIZE = "SORT_BY_CHECKPOINT_SIZE"
    LOG_RETENTION_DAYS = "SORT_BY_LOG_RETENTION_DAYS"


class WorkloadFilter(StrEnum):
    """``GetTrialWorkloadsRequestFilterOption``."""

    UNSPECIFIED = "FILTER_OPTION_UNSPECIFIED"
    CHECKPOINT = "FILTER_OPTION_CHECKPOINT"
    VALIDATION = "FILTER_OPTION_VALIDATION"
    CHECKPOINT_OR_VALIDATION = "FILTER_OPTION_CHECKPOINT_OR_VALIDATION"


TRAINING = "training"
VALIDATION = "validation"


def summary_key(group: str) -> str:
    """Where Determined keeps a group's values, in a report and in summary metrics: training
    under ``avg_metrics``, validation under ``validation_metrics``, any other by its name."""
    return {TRAINING: "avg_metrics", VALIDATION: "validation_metrics"}.get(group, group)


def summary_metrics(reports: Iterable[rest.Metric]) -> dict[str, Any]:
    """Determined's summary of a trial's reports: for each group and metric, the count, sum,
    min, max and last value of a numeric metric (``type: number``); the last value of any
    other (``type``: string, boolean, object...). Archived reports (of runs whose steps were
    redone) are left out, as they are from the trial's line of training."""
    summary: dict[str, dict[str, dict[str, Any]]] = {}
    for report in sorted(reports, key=lambda m: (m.steps_completed, m.time)):
        if report.archived:
            continue
        group = summary.setdefault(summary_key(report.group), {})
        for name, value in report.metrics.items():
            _fold(group.setdefault(name, {}), value)
    return summary


def _fold(entry: dict[str, Any], value: Any) -> None:
    if _is_number(value):
        if entry.get("type") != "number":
            entry.clear()
            entry.update(type="number", count=0, sum=0.0, min=value, max=value)
        entry["count"] += 1
        entry["sum"] += value
        entry["min"] = min(entry["min"], value)
        entry["max"] = max(entry["max"], value)
        entry["last"] = value
        return
    entry.clear()
    entry.update(type=_json_type(value), last=value)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "object"
    return "number"


def metrics_workload(report: rest.Metric) -> MetricsWorkload:
    """A training or validation report as a workload."""
    return MetricsWorkload(
        metrics=Metrics(avg_metrics=report.metrics),
        total_batches=report.steps_completed,
        end_time=timestamp(report.time),
    )


def checkpoint_workload(checkpoint: rest.Checkpoint) -> CheckpointWorkload:
    return CheckpointWorkload(
        uuid=checkpoint.uuid,
        state=checkpoint_state(checkpoint.state),
        total_batches=checkpoint.steps_completed,
        end_time=timestamp(checkpoint.reported_at),
        metadata=checkpoint.metadata,
        resources={path: str(size) for path, size in checkpoint.resources.items()},
    )


def workloads(
    reports: Iterable[rest.Metric], checkpoints: Iterable[rest.Checkpoint]
) -> list[WorkloadContainer]:
    """A trial's training and validation reports (not archived ones; other groups are not
    workloads) and its checkpoints, by step; at one step, training, then validation, then
    the checkpoint."""
    keyed: list[tuple[int, int, float, WorkloadContainer]] = []
    for report in reports:
        if report.archived or report.group not in (TRAINING, VALIDATION):
            continue
        shown = metrics_workload(report)
        if report.group == TRAINING:
            container, rank = WorkloadContainer(training=shown), 0
        else:
            container, rank = WorkloadContainer(validation=shown), 1
        keyed.append((report.steps_completed, rank, report.time, container))
    for ckpt in checkpoints:
        container = WorkloadContainer(checkpoint=checkpoint_workload(ckpt))
        keyed.append((ckpt.steps_completed, 2, ckpt.reported_at, container))
    keyed.sort(key=lambda k: k[:3])
    return [container for *_, container in keyed]


def det_trial(
    trial: rest.Trial,
    *,
    reports: Sequence[rest.Metric] | None = None,
    checkpoints: Sequence[rest.Checkpoint] | None = None,
) -> Trial:
    """assay's trial as Determined's clients read one. With the trial's ``reports`` its
    summary metrics are complete; without them they hold the last value of each metric of its
    latest training and validation. With its ``checkpoints``, their count and total size are
    shown too. A :class:`rest.TrialDetail` gives the time its finished runs ran."""
    if reports is None:
        latest = [m for m in (trial.latest_training, trial.latest_validation) if m is not None]
        summary = summary_metrics(latest)
        for group in summary.values():
            for entry in group.values():
                for field in ("count", "sum", "min", "max"):
                    entry.pop(field, None)
    else:
        summary = summary_metrics(reports)
    counted: dict[str, Any] = {}
    if checkpoints is not None:
        kept = [c for c in checkpoints if c.state != CheckpointState.DELETED]
        counted = {
            "checkpoint_count": len(kept),
            "total_checkpoint_size": str(sum(c.size for c in kept)),
        }
    return Trial(
        id=trial.id,
        experiment_id=trial.experiment_id,
        start_time=timestamp(trial.created_at),
        end_time=None if trial.ended_at is None else timestamp(trial.ended_at),
        state=DetTrialState.of(trial.state),
        restarts=trial.restarts,
        hparams=trial.hparams,
        total_batches_processed=trial.steps_completed,
        latest_validation=(
            None if trial.latest_validation is None else metrics_workload(trial.latest_validation)
        ),
        searcher_metric_value=trial.best_validation,
        summary_metrics=summary,
        wall_clock_time=_wall_clock(trial),
        **counted,
    )


def _wall_clock(trial: rest.Trial) -> float | None:
    if not isinstance(trial, rest.TrialDetail):
        return None
    return sum(
        a.ended_at - a.started_at
        for a in trial.allocations
        if a.started_at is not None and a.ended_at is not None
    )
