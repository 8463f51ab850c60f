"""``/api/v1/jobs``: the job queue of a resource pool, and changing jobs' place in it."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from assay import rest
from assay.api._deps import SIGNED_IN, ActorDep, ExperimentId, MasterDep
from assay.scheduler import JobUpdate

router = APIRouter(prefix="/api/v1", tags=["jobs"], dependencies=SIGNED_IN)


def _update(job_id: str, change: rest.JobChange) -> JobUpdate:
    fields = change.model_dump(exclude={"job_id"})
    return JobUpdate(job_id=job_id, **fields)


@router.get("/jobs", response_model=rest.JobQueue)
async def list_jobs(master: MasterDep, resource_pool: str | None = None) -> Response:
    """Active jobs of a pool (the default compute pool unless named), in scheduling order."""
    body = await master.reads.queue_json(resource_pool)
    return Response(body, media_type="application/json")


@router.patch("/jobs/{job_id}")
async def update_job(
    job_id: str, body: rest.JobChange, master: MasterDep, actor: ActorDep
) -> rest.JobsUpdated:
    return await master.experiments.update_jobs(actor, [_update(job_id, body)])


@router.post("/jobs/update-batch")
async def update_batch(body: rest.JobBatch, master: MasterDep, actor: ActorDep) -> rest.JobsUpdated:
    """Apply every update or none: all problems are reported together."""
    updates = [_update(change.job_id, change) for change in body.updates]
    return await master.experiments.update_jobs(actor, updates)


@router.patch("/experiments/{experiment_id}")
async def set_experiment_resources(
    experiment_id: ExperimentId, body: rest.ExperimentResources, master: MasterDep, actor: ActorDep
) -> rest.Experiment:
    """Apply every field given, or none when one is refused; the experiment as changed."""
    return await master.experiments.set_resources(
        actor, experiment_id, body.model_dump(exclude_unset=True)
    )
