"""``/api/v1/trials``: read trials, their metrics and logs (optionally followed), kill them."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse
from sqlalchemy.orm import Session

from assay.api._deps import MasterDep
from assay.api._serialize import allocation_json, checkpoint_json, log_json, metric_json, trial_json
from assay.db import Trial, allocations, checkpoints, logs, metrics, trials
from assay.master import TrialState

router = APIRouter(prefix="/api/v1/trials", tags=["trials"])

LOG_PAGE = 1000


def _load(session: Session, trial_id: int) -> Trial:
    return trials.require(session, trial_id)


@router.get("/{trial_id}")
async def get_trial(trial_id: int, master: MasterDep) -> dict[str, Any]:
    """A trial, with its allocations (one per run: where and when it ran, how it ended)."""

    def read(session: Session) -> dict[str, Any]:
        out = trial_json(_load(session, trial_id))
        out["allocations"] = [allocation_json(a) for a in allocations.of_trial(session, trial_id)]
        return out

    return await master.db.run(read)


@router.get("/{trial_id}/metrics")
async def get_metrics(
    trial_id: int,
    master: MasterDep,
    group: str | None = None,
    include_archived: bool = False,
) -> dict[str, Any]:
    def read(session: Session) -> dict[str, Any]:
        _load(session, trial_id)
        rows = metrics.series(session, trial_id, group, include_archived=include_archived)
        return {"metrics": [metric_json(m) for m in rows]}

    return await master.db.run(read)


@router.get("/{trial_id}/checkpoints")
async def get_checkpoints(trial_id: int, master: MasterDep) -> dict[str, Any]:
    def read(session: Session) -> dict[str, Any]:
        _load(session, trial_id)
        return {
            "checkpoints": [checkpoint_json(c) for c in checkpoints.of(session, trial_id=trial_id)]
        }

    return await master.db.run(read)


@router.post("/{trial_id}/kill")
async def kill_trial(trial_id: int, master: MasterDep) -> dict[str, Any]:
    await master.kill_trial(trial_id)
    return await master.db.run(lambda s: trial_json(_load(s, trial_id)))


@router.get("/{trial_id}/logs", response_model=None)
async def get_logs(
    trial_id: int,
    master: MasterDep,
    follow: bool = False,
    after: int = Query(default=0, ge=0, description="Only lines with an id above this."),
    limit: int = Query(default=LOG_PAGE, ge=1, le=100_000),
) -> dict[str, Any] | StreamingResponse:
    """Log lines of all the trial's runs. With ``follow=true``, a server-sent event stream of
    ``log`` events that ends with an ``end`` event once the trial has ended."""
    if not follow:

        def read(session: Session) -> dict[str, Any]:
            _load(session, trial_id)
            return {"logs": [log_json(e) for e in logs.after(session, trial_id, after, limit)]}

        return await master.db.run(read)
    await master.db.run(lambda s: _load(s, trial_id))
    return StreamingResponse(_follow(master, trial_id, after), media_type="text/event-stream")


async def _follow(master: MasterDep, trial_id: int, after: int) -> AsyncIterator[str]:
    key = ("logs", trial_id)
    last = after
    while True:
        since = master.waiters.version(key)

        def read(session: Session, last: int = last) -> tuple[list[dict[str, Any]], bool]:
            rows = [log_json(e) for e in logs.after(session, trial_id, last, LOG_PAGE)]
            trial = _load(session, trial_id)
            return rows, TrialState(trial.state).terminal

        rows, ended = await master.db.run(read)
        for row in rows:
            last = row["id"]
            yield f"event: log\ndata: {json.dumps(row)}\n\n"
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
