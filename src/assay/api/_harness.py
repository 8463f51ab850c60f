"""Endpoints for trial processes (the harness), authenticated by their allocation's token.

Reports answer 204 No Content: the harness needs to know only that they were stored.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from assay import rest
from assay.api._deps import USER_OR_TRIAL, ExperimentId, MasterDep, TokenDep, TrialId
from assay.errors import Unauthorized

router = APIRouter(prefix="/api/v1", tags=["harness"])

CheckpointUuid = Annotated[
    str, Path(max_length=64, pattern=rest.NO_NUL, description="The checkpoint's uuid.")
]


@router.get("/trials/{trial_id}/searcher/operation")
async def next_operation(
    trial_id: TrialId,
    master: MasterDep,
    token: TokenDep,
    timeout: Annotated[float, Query(ge=0, le=600)] = 60.0,
) -> rest.SearcherOperation:
    """Long-poll: the trial's next length to train to, waiting up to ``timeout`` seconds."""
    caller = await master.harness.caller(token, trial_id)
    return await master.harness.operation(caller, timeout)


@router.post("/trials/{trial_id}/searcher/completed_operation", status_code=204)
async def completed_operation(
    trial_id: TrialId, body: rest.CompletedOperation, master: MasterDep, token: TokenDep
) -> None:
    caller = await master.harness.caller(token, trial_id)
    await master.harness.complete_operation(caller, body.length, body.metric)


@router.post("/trials/{trial_id}/metrics", status_code=204)
async def report_metrics(
    trial_id: TrialId, body: rest.MetricsBatch, master: MasterDep, token: TokenDep
) -> None:
    caller = await master.harness.caller(token, trial_id)
    await master.harness.report_metrics(caller, [r.to_protocol() for r in body.reports])


@router.post("/trials/{trial_id}/progress", status_code=204)
async def report_progress(
    trial_id: TrialId, body: rest.ProgressReport, master: MasterDep, token: TokenDep
) -> None:
    caller = await master.harness.caller(token, trial_id)
    await master.harness.report_progress(caller, body.progress)


@router.post("/trials/{trial_id}/early_exit", status_code=204)
async def report_early_exit(
    trial_id: TrialId, body: rest.EarlyExitReport, master: MasterDep, token: TokenDep
) -> None:
    caller = await master.harness.caller(token, trial_id)
    await master.harness.report_early_exit(caller, body.reason)


@router.get("/allocations/{allocation_id}/signals/preemption")
async def preemption(
    allocation_id: str,
    master: MasterDep,
    token: TokenDep,
    timeout_seconds: Annotated[float, Query(ge=0, le=600)] = 60.0,
) -> rest.PreemptionSignal:
    """Long-poll: whether the allocation should checkpoint and exit, waiting up to
    ``timeout_seconds`` for the answer to become yes."""
    caller = await master.harness.caller(token)
    if caller.allocation_id != allocation_id:
        raise Unauthorized(f"this token belongs to allocation {caller.allocation_id}")
    return await master.harness.preemption(allocation_id, timeout_seconds)


@router.post("/checkpoints")
async def report_checkpoint(
    body: rest.CheckpointReport, master: MasterDep, token: TokenDep
) -> rest.Checkpoint:
    caller = await master.harness.caller(token)
    return await master.harness.report_checkpoint(caller, body.to_protocol())


@router.get("/checkpoints/{uuid}", dependencies=USER_OR_TRIAL)
async def get_checkpoint(uuid: CheckpointUuid, master: MasterDep) -> rest.Checkpoint:
    return await master.reads.checkpoint(uuid)


@router.get("/experiments/{experiment_id}/searcher/best_validation", dependencies=USER_OR_TRIAL)
async def best_validation(experiment_id: ExperimentId, master: MasterDep) -> rest.BestValidation:
    return await master.reads.best_validation(experiment_id)
