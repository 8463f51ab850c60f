"""What the live event stream (``GET /api/v1/events``) sends: one model per kind of event.

Every message of the stream is a server-sent event whose ``event:`` is one of :class:`EventKind`
and whose ``data:`` is the JSON of the model named there, with an ``id:`` (a resync's is the
position the stream is at); a client that reconnects sends the last one it saw as
``Last-Event-ID`` (browsers' ``EventSource`` does that by itself) and gets every batch after
it, none twice, or a ``resync`` when those are no longer kept. The OpenAPI document gives the
schema of a message, its data's included (``GET /api/v1/events``).
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from assay.protocol import ExperimentState, TrialState
from assay.rest._common import Resource
from assay.rest._trials import Metric


class EventKind(StrEnum):
    """The ``event:`` field of a message of the live stream."""

    BATCH = "batch"
    """Data: :class:`EventBatch`."""
    RESYNC = "resync"
    """Data: :class:`EventResync`. Changes were missed: read again what is shown."""


class ExperimentChange(Resource):
    """An experiment's fields that changed state, as they are after the change."""

    id: int
    name: str
    state: ExperimentState
    archived: bool
    progress: float
    message: str
    labels: list[str]
    started_at: float | None
    ended_at: float | None
    deleted: bool = Field(default=False, description="It was deleted; the rest is as it was.")


class TrialChange(Resource):
    """A trial as it is after a change of its state, steps, best validation or checkpoint.

    ``steps_completed`` only grows and ``best_validation`` only improves: a client keeps the
    largest steps and the best validation it has seen (a metrics event may carry newer ones)."""

    id: int
    experiment_id: int
    state: TrialState
    restarts: int
    infra_restarts: int = 0
    runs: int
    steps_completed: int
    latest_checkpoint: str | None
    best_validation: float | None
    progress: float
    early_stopped: bool
    waiting_at: str | None = Field(
        default=None, description="While it is WAITING: where its searcher holds it."
    )
    message: str
    started_at: float | None
    ended_at: float | None


class TrialMetrics(Resource):
    """Metric reports a trial just stored. A report is identified by (trial, run, group,
    steps_completed): one already shown (read before the stream caught up) is the same one."""

    trial_id: int
    experiment_id: int
    metrics: list[Metric]
    steps_completed: int = Field(description="The trial's steps after these reports.")
    best_validation: float | None = Field(description="The trial's best validation after them.")


class EventBatch(Resource):
    """Changes committed together (or one after another while the stream was busy), in order."""

    experiments: list[ExperimentChange] = []
    trials: list[TrialChange] = []
    metrics: list[TrialMetrics] = []
    queue: bool = Field(
        default=False,
        description="The job queue changed: a job or task was added, ended, or had its state, "
        "priority, weight, pool or place changed, or an allocation started or ended. Read the "
        "queue (and the tasks shown) again.",
    )
    cluster: bool = Field(
        default=False,
        description="The cluster changed: an agent connected, left, or was enabled or "
        "disabled, or slots were taken or freed. Read the pools and agents again.",
    )

    def is_empty(self) -> bool:
        return not (self.experiments or self.trials or self.metrics or self.queue or self.cluster)


class EventResync(Resource):
    """The changes since the ``Last-Event-ID`` are not kept any more (the master restarted, or
    the client fell too far behind): read again what is shown, then keep following."""

    reason: str
