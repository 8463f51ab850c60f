"""Determined's job queue (``det job list``, ``det job update``, ``det job update-batch``):
assay's queue of a pool, read and changed by one call to the master each, in Determined's
shapes. The queue's rules are assay's (``assay job update``): moves ahead of or behind a job
follow Determined's, and a refused update changes nothing, every problem said in one line."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query

from assay import rest
from assay.api._deps import MasterDep
from assay.api.determined._base import ActorDep, Limit, Offset, Order, signed_router
from assay.rest import determined as det
from assay.scheduler import JobUpdate

router = signed_router()

Pool = Annotated[str | None, Query(alias="resourcePool", max_length=128, pattern=rest.NO_NUL)]
States = Annotated[list[det.JobState], Query()]


async def _queue_page(
    master: MasterDep,
    resource_pool: Pool = None,
    offset: Offset = 0,
    limit: Limit = 0,
    order_by: Order = det.OrderBy.ASC,
    states: States = [],  # noqa: B006
) -> tuple[list[det.Job], det.Pagination]:
    """The active jobs of a pool (the default compute pool unless named) in scheduling order
    (``ORDER_BY_DESC``: last first), in ``states`` when given, paged."""
    return job_page(await master.reads.queue(resource_pool), offset, limit, order_by, states)


QueuePage = Annotated[tuple[list[det.Job], det.Pagination], Depends(_queue_page)]


@router.get("/api/v1/job-queues-v2")
async def list_jobs(listed: QueuePage) -> det.GetJobsV2Response:
    """``det job list``."""
    jobs, page = listed
    return det.GetJobsV2Response(jobs=[det.RbacJob(full=j) for j in jobs], pagination=page)


@router.get("/api/v1/job-queues")
async def list_jobs_v1(listed: QueuePage) -> det.GetJobsResponse:
    """The same list as ``job-queues-v2``, each job unwrapped (Determined's older request)."""
    jobs, page = listed
    return det.GetJobsResponse(jobs=jobs, pagination=page)


@router.post("/api/v1/job-queues")
async def update_jobs(
    body: det.UpdateJobQueue, master: MasterDep, actor: ActorDep
) -> det.UpdateJobQueueResponse:
    """``det job update`` and each update of ``det job update-batch`` (one request each):
    priority, weight, pool, or a place ahead of or behind another job (``aheadOf``,
    ``behindOf``, which Determined's web UI sends), all applied or none."""
    await master.experiments.update_jobs(actor, [job_update(c) for c in body.updates])
    return det.UpdateJobQueueResponse()


def job_update(change: det.QueueControl) -> JobUpdate:
    """One of Determined's queue changes as assay's queue takes it."""
    return JobUpdate(
        job_id=change.job_id,
        priority=change.priority,
        weight=change.weight,
        resource_pool=change.resource_pool,
        ahead_of=change.ahead_of,
        behind_of=change.behind_of,
    )


def job_page(
    queue: rest.JobQueue,
    offset: int,
    limit: int,
    order: det.OrderBy,
    states: list[det.JobState],
) -> tuple[list[det.Job], det.Pagination]:
    """The page of ``queue`` a list asks for: its jobs in ``states`` (all when none), in
    scheduling order or its reverse, from ``offset`` (negative: from the end), ``limit`` of
    them (0: all)."""
    wanted = frozenset(states)
    jobs = [j for j in map(det.det_job, queue.jobs) if det.job_in_states(j, wanted)]
    if order is det.OrderBy.DESC:
        jobs.reverse()
    page = det.paginate(len(jobs), offset, limit)
    return jobs[page.start_index : page.end_index], page
