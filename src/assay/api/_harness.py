"""Endpoints for trial processes (the harness), authenticated by their allocation's token.

Reports answer 204 No Content: the harness needs to know only that they were stored.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query
from sqlalchemy.orm import Session

from assay import rest
from assay.api import _serialize as out
from assay.api._deps import ExperimentId, MasterDep, TokenDep, TrialId
from assay.db import Checkpoint, Experiment, Trial
from assay.db import _queries as q
from assay.errors import NotFound, Unauthorized

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
    caller = await master.caller(token, trial_id)
    return rest.SearcherOperation.model_validate(await master.next_operation(caller, timeout))


@router.post("/trials/{trial_id}/searcher/completed_operation", status_code=204)
async def completed_operation(
    trial_id: TrialId, body: rest.CompletedOperation, master: MasterDep, token: TokenDep
) -> None:
    caller = await master.caller(token, trial_id)
    await master.complete_operation(caller, body.length, body.metric)


@router.post("/trials/{trial_id}/metrics", status_code=204)
async def report_metrics(
    trial_id: TrialId, body: rest.MetricsBatch, master: MasterDep, token: TokenDep
) -> None:
    caller = await master.caller(token, trial_id)
    await master.report_metrics(caller, [r.model_dump() for r in body.reports])


@router.post("/trials/{trial_id}/progress", status_code=204)
async def report_progress(
    trial_id: TrialId, body: rest.ProgressReport, master: MasterDep, token: TokenDep
) -> None:
    caller = await master.caller(token, trial_id)
    await master.report_progress(caller, body.progress)


@router.post("/trials/{trial_id}/early_exit", status_code=204)
async def report_early_exit(
    trial_id: TrialId, body: rest.EarlyExitReport, master: MasterDep, token: TokenDep
) -> None:
    caller = await master.caller(token, trial_id)
    await master.report_early_exit(caller, body.reason)


@router.get("/allocations/{allocation_id}/signals/preemption")
async def preemption(
    allocation_id: str,
    master: MasterDep,
    token: TokenDep,
    timeout_seconds: Annotated[float, Query(ge=0, le=600)] = 60.0,
) -> rest.PreemptionSignal:
    """Long-poll: whether the allocation should checkpoint and exit, waiting up to
    ``timeout_seconds`` for the answer to become yes."""
    caller = await master.caller(token)
    if caller.allocation_id != allocation_id:
        raise Unauthorized(f"this token belongs to allocation {caller.allocation_id}")
    return rest.PreemptionSignal(preempt=await master.preemption(allocation_id, timeout_seconds))


@router.post("/checkpoints")
async def report_checkpoint(
    body: rest.CheckpointReport, master: MasterDep, token: TokenDep
) -> rest.Checkpoint:
    caller = await master.caller(token)
    await master.report_checkpoint(caller, body.model_dump())
    return await master.db.run(lambda s: out.checkpoint(_checkpoint(s, body.uuid)))


def _checkpoint(session: Session, uuid: str) -> Checkpoint:
    return checkpoints.require(session, uuid)


@router.get("/checkpoints/{uuid}")
async def get_checkpoint(uuid: CheckpointUuid, master: MasterDep) -> rest.Checkpoint:
    return await master.db.run(lambda s: out.checkpoint(_checkpoint(s, uuid)))


@router.get("/experiments/{experiment_id}/searcher/best_validation")
async def best_validation(experiment_id: ExperimentId, master: MasterDep) -> rest.BestValidation:
    def read(session: Session) -> rest.BestValidation:
        exp = session.get(Experiment, experiment_id)
        if exp is None:
            raise NotFound(f"experiment {experiment_id} not found")
        best: Trial | None = q.best_trial(session, experiment_id)
        return rest.BestValidation(best_validation=None if best is None else best.best_validation)

    return await master.db.run(read)
