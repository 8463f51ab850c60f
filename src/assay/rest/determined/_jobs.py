"""The job queue as Determined's clients read and change it: ``v1Job`` (``det job list``, from
``GET /api/v1/job-queues-v2``) and ``v1QueueControl`` (``det job update``, ``det job
update-batch``: ``POST /api/v1/job-queues``).

A job's ``jobId`` is assay's queue id (``assay job list``'s ID column), and ``entityId`` the
experiment's id, or the job's own id (``assay job describe``) for work that is not an
experiment."""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from assay import rest
from assay.protocol import JobState as AssayJobState
from assay.rest._common import NO_NUL
from assay.rest.determined._common import DetRequest, DetResource, Pagination, timestamp
from assay.rest.determined._experiments import DEFAULT_PROJECT_ID


class JobState(StrEnum):
    """``jobv1State``: whether a job waits for slots or has them."""

    UNSPECIFIED = "STATE_UNSPECIFIED"
    QUEUED = "STATE_QUEUED"
    SCHEDULED = "STATE_SCHEDULED"
    SCHEDULED_BACKFILLED = "STATE_SCHEDULED_BACKFILLED"


class JobType(StrEnum):
    """``jobv1Type``: what a job runs."""

    UNSPECIFIED = "TYPE_UNSPECIFIED"
    EXPERIMENT = "TYPE_EXPERIMENT"
    NOTEBOOK = "TYPE_NOTEBOOK"
    TENSORBOARD = "TYPE_TENSORBOARD"
    SHELL = "TYPE_SHELL"
    COMMAND = "TYPE_COMMAND"
    CHECKPOINT_GC = "TYPE_CHECKPOINT_GC"
    EXTERNAL = "TYPE_EXTERNAL"
    GENERIC = "TYPE_GENERIC"


class JobSummary(DetResource):
    """``v1JobSummary``: where a job stands in its pool's queue."""

    state: JobState
    jobs_ahead: int = Field(description="Jobs before it in scheduling order.")


class Job(DetResource):
    """``v1Job``: an active job of a pool's queue."""

    job_id: str = Field(description="assay's queue id, as `assay job list` shows it.")
    type: JobType
    name: str
    entity_id: str = Field(description="The experiment's id, or the job's (`assay job describe`).")
    submission_time: str
    username: str
    resource_pool: str
    is_preemptible: bool
    priority: int
    weight: float
    allocated_slots: int
    requested_slots: int
    summary: JobSummary
    workspace_id: int = DEFAULT_PROJECT_ID
    user_id: int | None = None
    progress: float | None = None


class RbacJob(DetResource):
    """``v1RBACJob``: a job shown in full (assay shows every user every job of the queue, as
    ``assay job list`` does; Determined's ``limited`` form is for jobs one may not view)."""

    full: Job | None = None


class GetJobsV2Response(DetResource):
    """``GET /api/v1/job-queues-v2`` (``det job list``)."""

    jobs: list[RbacJob]
    pagination: Pagination


class GetJobsResponse(DetResource):
    """``GET /api/v1/job-queues``: the same jobs, without the ``full`` wrapping."""

    jobs: list[Job]
    pagination: Pagination


class QueueControl(DetRequest):
    """``v1QueueControl``: one change to one job. Determined's CLI sends every field it does
    not set as null, so null means "unchanged", as leaving the field out does."""

    job_id: str = Field(min_length=1, max_length=64, pattern=NO_NUL)
    priority: int | None = None
    weight: float | None = None
    resource_pool: str | None = Field(default=None, max_length=128, pattern=NO_NUL)
    ahead_of: str | None = Field(default=None, max_length=64, pattern=NO_NUL)
    behind_of: str | None = Field(default=None, max_length=64, pattern=NO_NUL)


class UpdateJobQueue(DetRequest):
    """``POST /api/v1/job-queues`` (``v1UpdateJobQueueRequest``): applied all together or not
    at all, every problem named in the one refusal."""

    updates: list[QueueControl] = Field(min_length=1, max_length=1000)


class UpdateJobQueueResponse(DetResource):
    """``v1UpdateJobQueueResponse``: an empty object."""


_TYPES = {t.name: t for t in JobType}
"""assay's job types (EXPERIMENT, COMMAND...) by the name Determined's type of it has."""


def job_type(kind: str) -> JobType:
    """assay's job type as Determined names it: an OpenPAI job (JOB) and a generic task are
    Determined's generic tasks."""
    return _TYPES.get(kind.upper(), JobType.GENERIC)


def job_state(state: AssayJobState) -> JobState:
    """QUEUED waits; RUNNING and SCHEDULED (slots held for it while the work it preempted
    stops) are Determined's scheduled: "scheduled to run or running"."""
    return JobState.QUEUED if state == AssayJobState.QUEUED else JobState.SCHEDULED


def det_job(job: rest.Job) -> Job:
    """A row of ``assay job list`` as ``v1Job``."""
    entity = job.experiment_id if job.experiment_id is not None else job.task_id
    kind = job_type(job.type)
    return Job(
        job_id=job.id,
        type=kind,
        name=job.name,
        entity_id=str(entity) if entity is not None else job.id,
        submission_time=timestamp(job.submitted_at),
        username=job.user,
        resource_pool=job.resource_pool,
        # Only experiments checkpoint, so only they are preempted (the scheduler's rule).
        is_preemptible=kind is JobType.EXPERIMENT,
        priority=job.priority,
        weight=job.weight,
        allocated_slots=job.slots_acquired,
        requested_slots=job.slots_needed,
        summary=JobSummary(state=job_state(job.status), jobs_ahead=job.position),
    )


def job_in_states(job: Job, states: frozenset[JobState]) -> bool:
    """Whether ``job`` is one a list filtered to ``states`` shows (none given: every job)."""
    return not states or job.summary.state in states
