"""``/api/v1/trials``: read trials, their metrics and logs (optionally followed), kill them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse
from sqlalchemy.orm import Session

from assay import rest
from assay.api import _serialize as out
from assay.api._deps import MasterDep, TrialId
from assay.db import Trial
from assay.db import _queries as q
from assay.errors import NotFound
from assay.master import TrialState

router = APIRouter(prefix="/api/v1/trials", tags=["trials"])

LOG_PAGE = 1000


def _load(session: Session, trial_id: int) -> Trial:
    return trials.require(session, trial_id)


@router.get("/{trial_id}")
async def get_trial(trial_id: TrialId, master: MasterDep) -> rest.TrialDetail:
    """A trial, with its allocations (one per run: where and when it ran, how it ended)."""

    def read(session: Session) -> rest.TrialDetail:
        return out.trial_detail(_load(session, trial_id), q.allocations_of(session, trial_id))

    return await master.db.run(read)


@router.get("/{trial_id}/metrics")
async def get_metrics(
    trial_id: TrialId,
    master: MasterDep,
    group: Annotated[
        str | None, Query(max_length=64, pattern=rest.NO_NUL, description="Only this group.")
    ] = None,
    include_archived: bool = False,
) -> rest.MetricList:
    def read(session: Session) -> rest.MetricList:
        _load(session, trial_id)
        rows = q.metric_series(session, trial_id, group, include_archived=include_archived)
        return rest.MetricList(metrics=[out.metric(m) for m in rows])

    return await master.db.run(read)


@router.get("/{trial_id}/checkpoints")
async def get_checkpoints(trial_id: TrialId, master: MasterDep) -> rest.CheckpointList:
    def read(session: Session) -> rest.CheckpointList:
        _load(session, trial_id)
        rows = q.checkpoints_of(session, trial_id=trial_id)
        return rest.CheckpointList(checkpoints=[out.checkpoint(c) for c in rows])

    return await master.db.run(read)


@router.post("/{trial_id}/kill")
async def kill_trial(trial_id: TrialId, master: MasterDep) -> rest.Trial:
    await master.kill_trial(trial_id)
    return await master.db.run(lambda s: out.trial(_load(s, trial_id)))


_EVENT_STREAM = {
    "description": "With follow=true: a server-sent event stream of `log` events (each a "
    "LogEntry), ending with an `end` event once the trial has ended.",
    "content": {"text/event-stream": {"schema": {"type": "string"}}},
}


@router.get(
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
) -> rest.LogPage | StreamingResponse:
    """Log lines of all the trial's runs, oldest first."""
    if not follow:

        def read(session: Session) -> rest.LogPage:
            _load(session, trial_id)
            rows = q.logs_after(session, trial_id, after, limit)
            return rest.LogPage(logs=[out.log_entry(e) for e in rows])

        return await master.db.run(read)
    await master.db.run(lambda s: _load(s, trial_id))
    return StreamingResponse(_follow(master, trial_id, after), media_type="text/event-stream")


async def _follow(master: MasterDep, trial_id: int, after: int) -> AsyncIterator[str]:
    key = ("logs", trial_id)
    last = after
    while True:
        since = master.waiters.version(key)

        def read(session: Session, last: int = last) -> tuple[list[rest.LogEntry], bool]:
            rows = [out.log_entry(e) for e in q.logs_after(session, trial_id, last, LOG_PAGE)]
            trial = _load(session, trial_id)
            return rows, TrialState(trial.state).terminal

        rows, ended = await master.db.run(read)
        for row in rows:
            last = row.id
            yield f"event: log\ndata: {row.model_dump_json()}\n\n"
        if rows and len(rows) == LOG_PAGE:
            continue
        if ended and not rows:
            yield "event: end\ndata: {}\n\n"
            return
        if not rows:
            changed = await master.waiters.wait(key, since, 15.0)
            if master.waiters.closed:
                return
            if not changed:
                yield ": keep-alive\n\n"
