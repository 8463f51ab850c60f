"""``/api/v1/trials``: read trials, their metrics and logs (optionally followed), kill them."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Query
from fastapi.responses import Response, StreamingResponse

from assay import rest
from assay.api._deps import SIGNED_IN, STREAM_SIGNED_IN, ActorDep, MasterDep, TrialId
from assay.api._events import log_stream
from assay.master import LOG_PAGE

router = APIRouter(prefix="/api/v1/trials", tags=["trials"], dependencies=SIGNED_IN)
streams = APIRouter(prefix="/api/v1/trials", tags=["trials"], dependencies=STREAM_SIGNED_IN)
"""Reads a browser opens without headers (EventSource, a download link): the token may also
come as the ``token`` query parameter or the session cookie."""


@router.get("/{trial_id}", response_model=rest.TrialDetail)
async def get_trial(trial_id: TrialId, master: MasterDep) -> Response:
    """A trial, with its allocations (one per run: where and when it ran, how it ended)."""
    return Response(await master.reads.trial_json(trial_id), media_type="application/json")


@router.get("/{trial_id}/metrics", response_model=rest.MetricList)
async def get_metrics(
    trial_id: TrialId,
    master: MasterDep,
    group: Annotated[
        str | None, Query(max_length=64, pattern=rest.NO_NUL, description="Only this group.")
    ] = None,
    include_archived: bool = False,
) -> Response:
    body = await master.reads.metrics_json(trial_id, group, include_archived=include_archived)
    return Response(body, media_type="application/json")


@router.get("/{trial_id}/checkpoints")
async def get_checkpoints(trial_id: TrialId, master: MasterDep) -> rest.CheckpointList:
    return await master.reads.trial_checkpoints(trial_id)


@router.post("/{trial_id}/kill")
async def kill_trial(trial_id: TrialId, master: MasterDep, actor: ActorDep) -> rest.Trial:
    return await master.experiments.kill_trial(actor, trial_id)


_EVENT_STREAM = {
    "description": "With follow=true: a server-sent event stream of `log` events (each a "
    "LogEntry, its `id:` the line's id), ending with an `end` event once the trial has ended.",
    "content": {"text/event-stream": {"schema": {"type": "string"}}},
}


@streams.get(
    "/{trial_id}/logs",
    response_model=rest.LogPage,
    responses={200: _EVENT_STREAM},
)
async def get_logs(
    trial_id: TrialId,
    master: MasterDep,
    follow: bool = False,
    after: Annotated[
        int, Query(ge=0, le=rest.INT_MAX, description="Only lines with an id above this.")
    ] = 0,
    limit: Annotated[int, Query(ge=1, le=100_000)] = LOG_PAGE,
    last_event_id: Annotated[
        str | None,
        Header(
            alias="Last-Event-ID",
            max_length=64,
            description="With follow=true: the id of the last line seen (EventSource sends it "
            "when it reconnects); lines after it and after `after` follow.",
        ),
    ] = None,
) -> rest.LogPage | StreamingResponse:
    """Log lines of all the trial's runs, oldest first."""
    if not follow:
        return await master.reads.logs(trial_id, after, limit)
    if last_event_id is not None and last_event_id.strip().isdigit():
        after = max(after, min(int(last_event_id), rest.INT_MAX))
    return log_stream(await master.reads.follow_logs(trial_id, after))
