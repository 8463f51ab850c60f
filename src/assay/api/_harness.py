"""Endpoints for trial processes (the harness), authenticated by their allocation's token.

Reports answer 204 No Content: the harness needs to know only that they were stored.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from assay import rest
from assay.api._deps import ExperimentId, MasterDep, ReaderDep, TokenDep, TrialId
from assay.errors import Unauthorized
from assay.master import Caller

router = APIRouter(prefix="/api/v1", tags=["harness"])


async def _trial_caller(trial_id: TrialId, master: MasterDep, token: TokenDep) -> Caller:
    """The allocation running ``trial_id`` whose token this is; checked before the body is
    read, so a request without the token learns nothing of what it would have to send."""
    return await master.harness.caller(token, trial_id)


async def _any_caller(master: MasterDep, token: TokenDep) -> Caller:
    return await master.harness.caller(token)


TrialCaller = Annotated[Caller, Depends(_trial_caller)]
AllocationCaller = Annotated[Caller, Depends(_any_caller)]


@router.get("/trials/{trial_id}/searcher/operation")
async def next_operation(
    caller: TrialCaller,
    master: MasterDep,
    timeout: Annotated[float, Query(ge=0, le=600)] = 60.0,
) -> rest.SearcherOperation:
    """Long-poll: the trial's next length to train to, waiting up to ``timeout`` seconds."""
    return await master.harness.operation(caller, timeout)


@router.post("/trials/{trial_id}/searcher/completed_operation", status_code=204)
async def completed_operation(
    caller: TrialCaller, body: rest.CompletedOperation, master: MasterDep
) -> None:
    await master.harness.complete_operation(caller, body.length, body.metric)


@router.post("/trials/{trial_id}/metrics", status_code=204)
async def report_metrics(caller: TrialCaller, body: rest.MetricsBatch, master: MasterDep) -> None:
    await master.harness.report_metrics(caller, [r.to_protocol() for r in body.reports])


@router.post("/trials/{trial_id}/progress", status_code=204)
async def report_progress(
    caller: TrialCaller, body: rest.ProgressReport, master: MasterDep
) -> None:
    await master.harness.report_progress(caller, body.progress)


@router.post("/trials/{trial_id}/early_exit", status_code=204)
async def report_early_exit(
    caller: TrialCaller, body: rest.EarlyExitReport, master: MasterDep
) -> None:
    await master.harness.report_early_exit(caller, body.reason)


@router.get("/allocations/{allocation_id}/signals/preemption")
async def preemption(
    allocation_id: str,
    master: MasterDep,
    caller: AllocationCaller,
    timeout_seconds: Annotated[float, Query(ge=0, le=600)] = 60.0,
) -> rest.PreemptionSignal:
    """Long-poll: whether the allocation should checkpoint and exit, waiting up to
    ``timeout_seconds`` for the answer to become yes."""
    if caller.allocation_id != allocation_id:
        raise Unauthorized(f"this token belongs to allocation {caller.allocation_id}")
    return await master.harness.preemption(allocation_id, timeout_seconds)


@router.post("/checkpoints")
async def report_checkpoint(
    body: rest.CheckpointReport, master: MasterDep, caller: AllocationCaller
) -> rest.Checkpoint:
    return await master.harness.report_checkpoint(caller, body.to_protocol())


@router.get(
    "/experiments/{experiment_id}/searcher/best_validation",
    responses={403: {"description": "A trial's token, for another experiment."}},
)
async def best_validation(
    experiment_id: ExperimentId, master: MasterDep, reader: ReaderDep
) -> rest.BestValidation:
    """The best searcher metric any trial of the experiment has reported (a trial's token:
    its own experiment only)."""
    return await master.reads.best_validation(reader, experiment_id)
