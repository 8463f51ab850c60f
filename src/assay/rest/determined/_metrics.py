"""Trials' reports as Determined's SDK streams them (``v1MetricsReport`` in
``v1GetMetricsResponse``, ``v1GetTrainingMetricsResponse`` and
``v1GetValidationMetricsResponse``, which share one shape)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from assay import rest
from assay.rest.determined._common import DetResource


class MetricsReport(DetResource):
    """``v1MetricsReport``: one report, its values under the key Determined keeps its group's
    under (``avg_metrics`` for training and any group but validation, ``validation_metrics``
    for validation), as the SDK reads them."""

    id: int
    trial_id: int
    trial_run_id: int
    group: str
    total_batches: int
    end_time: str
    metrics: dict[str, Any]
    archived: bool


class GetMetricsResponse(DetResource):
    """One line of ``GET /api/v1/trials/metrics/trial_metrics`` (and of its training and
    validation forms): some reports, in the order the stream sends them."""

    metrics: list[MetricsReport]


METRICS_BATCH = 1000
"""The most reports one line of a metrics stream holds (as Determined's master sends them)."""


def metrics_report(report: rest.Metric, position: int) -> MetricsReport:
    """``report`` as the SDK reads one; ``position`` (from 1, in the trial's order of reports)
    stands for the row id assay does not show."""
    key = "validation_metrics" if report.group == "validation" else "avg_metrics"
    return MetricsReport(
        id=position,
        trial_id=report.trial_id,
        trial_run_id=report.run,
        group=report.group,
        total_batches=report.steps_completed,
        end_time=_millis(report.time),
        metrics={key: report.metrics},
        archived=report.archived,
    )


def _millis(seconds: float) -> str:
    # Determined's master truncates these to milliseconds: its SDK parses them.
    shown = datetime.fromtimestamp(seconds, UTC)
    return shown.isoformat(timespec="milliseconds").replace("+00:00", "Z")
