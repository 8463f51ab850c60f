"""Endpoints for trial processes (the harness), authenticated by their allocation's token."""

from __future__ import annotations

import math
from typing import Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from assay.api._deps import MasterDep, TokenDep
from assay.api._serialize import checkpoint_json
from assay.db import Checkpoint, Trial, checkpoints, experiments, trials
from assay.errors import InvalidRequest, Unauthorized

router = APIRouter(prefix="/api/v1", tags=["harness"])


class CompletedOperation(BaseModel):
    length: int = Field(ge=0)
    metric: float


class MetricsBatch(BaseModel):
    reports: list[dict[str, Any]]


class Progress(BaseModel):
    progress: float


class EarlyExit(BaseModel):
    reason: str


@router.get("/trials/{trial_id}/searcher/operation")
async def next_operation(
    trial_id: int,
    master: MasterDep,
    token: TokenDep,
    timeout: float = Query(default=60.0, ge=0, le=600),
) -> dict[str, Any]:
    caller = await master.caller(token, trial_id)
    return await master.next_operation(caller, timeout)


@router.post("/trials/{trial_id}/searcher/completed_operation")
async def completed_operation(
    trial_id: int, body: CompletedOperation, master: MasterDep, token: TokenDep
) -> dict[str, Any]:
    if not math.isfinite(body.metric):
        raise InvalidRequest(f"metric: must be a finite number, got {body.metric}")
    caller = await master.caller(token, trial_id)
    await master.complete_operation(caller, body.length, body.metric)
    return {}


@router.post("/trials/{trial_id}/metrics")
async def report_metrics(
    trial_id: int, body: MetricsBatch, master: MasterDep, token: TokenDep
) -> dict[str, Any]:
    caller = await master.caller(token, trial_id)
    await master.report_metrics(caller, body.reports)
    return {}


@router.post("/trials/{trial_id}/progress")
async def report_progress(
    trial_id: int, body: Progress, master: MasterDep, token: TokenDep
) -> dict[str, Any]:
    caller = await master.caller(token, trial_id)
    await master.report_progress(caller, body.progress)
    return {}


@router.post("/trials/{trial_id}/early_exit")
async def report_early_exit(
    trial_id: int, body: EarlyExit, master: MasterDep, token: TokenDep
) -> dict[str, Any]:
    caller = await master.caller(token, trial_id)
    await master.report_early_exit(caller, body.reason)
    return {}


@router.get("/allocations/{allocation_id}/signals/preemption")
async def preemption(
    allocation_id: str,
    master: MasterDep,
    token: TokenDep,
    timeout_seconds: float = Query(default=60.0, ge=0, le=600),
) -> dict[str, Any]:
    caller = await master.caller(token)
    if caller.allocation_id != allocation_id:
        raise Unauthorized(f"this token belongs to allocation {caller.allocation_id}")
    return {"preempt": await master.preemption(allocation_id, timeout_seconds)}


@router.post("/checkpoints")
async def report_checkpoint(
    body: dict[str, Any], master: MasterDep, token: TokenDep
) -> dict[str, Any]:
    caller = await master.caller(token)
    await master.report_checkpoint(caller, body)
    uuid = str(body.get("uuid"))
    return await master.db.run(lambda s: checkpoint_json(_checkpoint(s, uuid)))


def _checkpoint(session: Session, uuid: str) -> Checkpoint:
    return checkpoints.require(session, uuid)


@router.get("/checkpoints/{uuid}")
async def get_checkpoint(uuid: str, master: MasterDep) -> dict[str, Any]:
    return await master.db.run(lambda s: checkpoint_json(_checkpoint(s, uuid)))


@router.get("/experiments/{experiment_id}/searcher/best_validation")
async def best_validation(experiment_id: int, master: MasterDep) -> dict[str, Any]:
    def read(session: Session) -> dict[str, Any]:
        experiments.require(session, experiment_id)
        best: Trial | None = trials.best_of(session, experiment_id)
        return {"best_validation": None if best is None else best.best_validation}

    return await master.db.run(read)
