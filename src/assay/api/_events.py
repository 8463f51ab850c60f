"""``/api/v1/events``: live changes of experiments, trials and metrics (and whether the job
queue or the cluster changed) for the web UI, as server-sent events (see
:mod:`assay.rest._events` for the messages)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query
from fastapi.responses import StreamingResponse

from assay import rest
from assay.api._deps import STREAM_SIGNED_IN, MasterDep
from assay.master import LiveMessage, LogBatch

router = APIRouter(prefix="/api/v1", tags=["events"], dependencies=STREAM_SIGNED_IN)

RETRY_MS = 1000
"""How soon a browser's EventSource reconnects after the stream is cut."""

EVENT_ID = r"^[0-9a-f]+-[0-9]+$"
"""An event's ``id:``, ``<epoch>-<seq>``: what ``Last-Event-ID`` resumes after."""


def _event(kind: rest.EventKind, data: str, says: str) -> dict[str, Any]:
    """One message of the stream, as a client's parser hands it over: its fields."""
    return {
        "type": "object",
        "description": says,
        "required": ["event", "data", "id"],
        "properties": {
            "event": {"const": kind.value},
            "data": {
                "type": "string",
                "contentMediaType": "application/json",
                "contentSchema": {"$ref": f"#/components/schemas/{data}"},
            },
            "id": {"type": "string", "pattern": EVENT_ID},
            "retry": {"type": "integer", "minimum": 0},
        },
    }


EVENT_STREAM: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "A server-sent event stream. Each message's `event:` is an EventKind: "
        "`batch` (data: EventBatch) or `resync` (data: EventResync); each has an `id:` to "
        "resume after (a resync's is the position the stream is at). Lines starting with `:` "
        "keep the connection open.",
        # The schema of one message (OpenAPI before 3.2 describes an event stream by its
        # events), with its JSON data's own schema.
        "content": {
            "text/event-stream": {
                "schema": {
                    "oneOf": [
                        _event(rest.EventKind.BATCH, "EventBatch", "Changes, in order."),
                        _event(
                            rest.EventKind.RESYNC,
                            "EventResync",
                            "Changes were missed: read again what is shown.",
                        ),
                    ]
                }
            }
        },
    }
}

_Id = Annotated[int | None, Query(ge=0, le=rest.INT_MAX)]


@router.get("/events", response_class=StreamingResponse, responses=EVENT_STREAM)
async def events(
    master: MasterDep,
    experiment_id: Annotated[
        int | None,
        Query(
            ge=0,
            le=rest.INT_MAX,
            description="Follow this experiment, its trials and their new metrics; without "
            "it, every experiment's changes (and no trials or metrics).",
        ),
    ] = None,
    trial_id: Annotated[
        int | None,
        Query(
            ge=0,
            le=rest.INT_MAX,
            description="Follow only this trial (and its experiment) and its new metrics.",
        ),
    ] = None,
    queue: Annotated[
        bool,
        Query(description="Also say when the job queue changed (EventBatch.queue)."),
    ] = False,
    cluster: Annotated[
        bool,
        Query(description="Also say when agents or their slots changed (EventBatch.cluster)."),
    ] = False,
    last_event_id: Annotated[
        str | None,
        Header(
            alias="Last-Event-ID",
            max_length=64,
            description="The id of the last message seen: resume after it (EventSource "
            "sends it when it reconnects).",
        ),
    ] = None,
    after: Annotated[
        str | None,
        Query(max_length=64, description="As Last-Event-ID, for a client that cannot send it."),
    ] = None,
) -> StreamingResponse:
    """Live changes as they are committed: experiments' states and progress, trials' states,
    steps and best validation, new metric reports. Open the stream first, then read what to
    show: nothing committed after the first line of the stream is missed. That line,
    `: subscribed ID`, names the last change before the subscription; a read whose
    `X-Assay-Event-Id` header is older may lack the changes between, which a stream asked
    for with `Last-Event-ID` set to the read's id replays."""
    messages = await master.reads.follow_events(
        experiment_id=experiment_id,
        trial_id=trial_id,
        queue=queue,
        cluster=cluster,
        last_event_id=last_event_id or after,
    )
    return StreamingResponse(
        _sse(messages, master.reads.event_position),
        media_type="text/event-stream",
        # Proxies must pass each message on as it comes.
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _sse(
    messages: AsyncIterator[LiveMessage | None], position: Callable[[], str]
) -> AsyncIterator[str]:
    first = True
    async for message in messages:
        if message is None and first:
            # Read as the stream subscribes: no batch is published between the two.
            yield f"retry: {RETRY_MS}\n: subscribed {position()}\n\n"
        elif message is None:
            yield ": keep-alive\n\n"
        else:
            yield sse_message(message.kind, message.data.model_dump_json(), message.id)
        first = False


def sse_message(kind: str, data: str, event_id: str | None = None) -> str:
    """One server-sent event (``data`` is JSON: one line)."""
    head = f"id: {event_id}\n" if event_id else ""
    return f"{head}event: {kind}\ndata: {data}\n\n"


def log_stream(batches: AsyncIterator[LogBatch[Any]]) -> StreamingResponse:
    """A followed log as server-sent events, for every kind of work: a ``log`` event per line
    with the line's id (a client resumes with ``Last-Event-ID``), ``end`` after the last line,
    and a comment as a keep-alive."""
    return StreamingResponse(
        _log_events(batches),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _log_events(batches: AsyncIterator[LogBatch[Any]]) -> AsyncIterator[str]:
    async for batch in batches:
        for entry in batch.entries:
            yield sse_message("log", entry.model_dump_json(), str(entry.id))
        if batch.ended:
            yield "event: end\ndata: {}\n\n"
        elif not batch.entries:
            yield ": keep-alive\n\n"
