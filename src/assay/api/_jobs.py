"""``/api/v1/jobs``: the job queue of a resource pool, and changing jobs' place in it."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from assay.api._deps import MasterDep
from assay.scheduler import JobUpdate

router = APIRouter(prefix="/api/v1", tags=["jobs"])


class JobChange(BaseModel):
    """One change to a job (set exactly the fields to change)."""

    model_config = ConfigDict(extra="forbid")

    priority: int | None = None
    weight: float | None = None
    resource_pool: str | None = None
    ahead_of: str | None = None
    behind_of: str | None = None

    def update(self, job_id: str) -> JobUpdate:
        fields = self.model_dump(exclude={"job_id"})
        return JobUpdate(job_id=job_id, **fields)


class BatchChange(JobChange):
    job_id: str


class Batch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    updates: list[BatchChange] = Field(min_length=1)


class ExperimentResources(BaseModel):
    model_config = ConfigDict(extra="forbid")

    priority: int | None = None
    weight: float | None = None
    max_slots: int | None = Field(default=None, ge=0)


@router.get("/jobs")
async def list_jobs(master: MasterDep, resource_pool: str | None = None) -> dict[str, Any]:
    """Active jobs of a pool (the default compute pool unless named), in scheduling order."""
    return await master.list_jobs(resource_pool)


@router.patch("/jobs/{job_id}")
async def update_job(job_id: str, body: JobChange, master: MasterDep) -> dict[str, Any]:
    await master.update_jobs([body.update(job_id)])
    return {"updated": [job_id]}


@router.post("/jobs/update-batch")
async def update_batch(body: Batch, master: MasterDep) -> dict[str, Any]:
    """Apply every update or none: all problems are reported together."""
    updates = [change.update(change.job_id) for change in body.updates]
    return {"updated": await master.update_jobs(updates)}


@router.patch("/experiments/{experiment_id}")
async def set_experiment_resources(
    experiment_id: int, body: ExperimentResources, master: MasterDep
) -> dict[str, Any]:
    for field, value in body.model_dump(exclude_unset=True).items():
        await master.set_experiment_resource(experiment_id, field, value)
    return {"id": experiment_id}
