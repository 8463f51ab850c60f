"""Checkpoints as Determined's clients read them (``v1Checkpoint``, with its
``v1CheckpointTrainingMetadata``), the lists of an experiment's or a trial's checkpoints, and
the request that deletes some."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import Field

from assay.protocol import CheckpointState as AssayCheckpointState
from assay.rest.determined._common import DetRequest, DetResource, Pagination


class CheckpointState(StrEnum):
    """``checkpointv1State``. assay's ACTIVE checkpoint (stored and kept) is Determined's
    COMPLETED; one being deleted or deleted is DELETED (its files are gone or going)."""

    UNSPECIFIED = "STATE_UNSPECIFIED"
    ACTIVE = "STATE_ACTIVE"
    COMPLETED = "STATE_COMPLETED"
    ERROR = "STATE_ERROR"
    DELETED = "STATE_DELETED"
    PARTIALLY_DELETED = "STATE_PARTIALLY_DELETED"


class CheckpointSortBy(StrEnum):
    """``checkpointv1SortBy``: what a list of checkpoints is sorted by (``sortByAttr``)."""

    UNSPECIFIED = "SORT_BY_UNSPECIFIED"
    UUID = "SORT_BY_UUID"
    TRIAL_ID = "SORT_BY_TRIAL_ID"
    BATCH_NUMBER = "SORT_BY_BATCH_NUMBER"
    END_TIME = "SORT_BY_END_TIME"
    STATE = "SORT_BY_STATE"
    SEARCHER_METRIC = "SORT_BY_SEARCHER_METRIC"


class OrderBy(StrEnum):
    """``v1OrderBy``: ascending or descending (unspecified: the list's own default)."""

    UNSPECIFIED = "ORDER_BY_UNSPECIFIED"
    ASC = "ORDER_BY_ASC"
    DESC = "ORDER_BY_DESC"


class Metrics(DetResource):
    """``v1Metrics``: one report's values (``avgMetrics``, averaged over the batches)."""

    avg_metrics: dict[str, Any]
    batch_metrics: list[dict[str, Any]] | None = None


class CheckpointTrainingMetadata(DetResource):
    """``v1CheckpointTrainingMetadata``: the trial that saved a checkpoint. Determined's SDK
    downloads from ``experimentConfig.checkpoint_storage`` directly when it reaches that
    storage, and reads ``validationMetrics.avgMetrics`` at the checkpoint's step."""

    trial_id: int | None = None
    experiment_id: int | None = None
    experiment_config: dict[str, Any] | None = None
    hparams: dict[str, Any] | None = None
    training_metrics: Metrics | None = None
    validation_metrics: Metrics | None = None
    searcher_metric: float | None = Field(
        default=None, description="The searcher's metric at the checkpoint's step, if reported."
    )


class Checkpoint(DetResource):
    """``v1Checkpoint``."""

    uuid: str
    task_id: str | None = Field(default=None, description="assay's task: ``trial-<id>``.")
    allocation_id: str | None = None
    report_time: str | None = Field(default=None, description="RFC 3339, UTC.")
    resources: dict[str, str] = Field(
        description="File sizes by path inside the checkpoint, as decimal strings (protobuf "
        "writes int64 so)."
    )
    metadata: dict[str, Any] = Field(description="What the trial saved with it, with its step.")
    state: CheckpointState
    training: CheckpointTrainingMetadata
    storage_id: int | None = None


class GetCheckpointResponse(DetResource):
    """``GET /api/v1/checkpoints/{checkpointUuid}`` (``v1GetCheckpointResponse``)."""

    checkpoint: Checkpoint


class CheckpointList(DetResource):
    """``GET /api/v1/experiments/{id}/checkpoints`` and ``GET /api/v1/trials/{id}/checkpoints``
    (``v1GetExperimentCheckpointsResponse``, ``v1GetTrialCheckpointsResponse``: one shape)."""

    checkpoints: list[Checkpoint]
    pagination: Pagination


CheckpointUuid = Annotated[str, Field(min_length=1, max_length=64)]


class DeleteCheckpoints(DetRequest):
    """``DELETE /api/v1/checkpoints`` (``v1DeleteCheckpointsRequest``)."""

    checkpoint_uuids: Annotated[list[CheckpointUuid], Field(min_length=1, max_length=10_000)]


class DeleteCheckpointsResponse(DetResource):
    """``DELETE /api/v1/checkpoints`` answers an empty object once the checkpoints are
    deleted (Determined's master answers before; assay's deletes first, then answers)."""


def checkpoint_state(state: AssayCheckpointState) -> CheckpointState:
    """assay's checkpoint state as Determined's: a stored and kept one is COMPLETED; one being
    deleted or deleted is DELETED (its files are gone or going)."""
    if state == AssayCheckpointState.ACTIVE:
        return CheckpointState.COMPLETED
    return CheckpointState.DELETED
