"""The job queue of a resource pool, and changes to jobs' place in it."""

from __future__ import annotations

from pydantic import ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from assay.protocol import JobState
from assay.rest._common import Priority, Request, Resource, Waiting, Weight, left_out


class Job(Resource):
    position: int = Field(description="Place in the pool's scheduling order, from 0.")
    id: str
    type: str = Field(
        description="EXPERIMENT, JOB (OpenPAI), COMMAND, GENERIC, TENSORBOARD, NOTEBOOK or SHELL."
    )
    name: str
    experiment_id: int | None = Field(description="The experiment it runs, if it is one.")
    task_id: int | None = Field(
        default=None, description="Its id in `assay job describe`, when not an experiment."
    )
    priority: int
    weight: float
    max_slots: int | None
    submitted_at: float
    slots_acquired: int
    slots_needed: int
    status: JobState = Field(
        description="RUNNING (some of it runs), SCHEDULED (slots reserved) or QUEUED."
    )
    user: str
    resource_pool: str
    waiting: Waiting = None


class JobQueue(Resource):
    resource_pool: str
    scheduler: str = Field(description="The pool's scheduler: priority or fair_share.")
    jobs: list[Job] = Field(description="In scheduling order.")


class JobChange(Request):
    """One change to a job: set exactly the fields to change (at least one)."""

    # A change of none of its fields is refused ("nothing to change"): the schema says so.
    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    # Each may be left out (unchanged), never null.
    priority: Priority = left_out("1 (first) to 99; priority pools.")
    weight: Weight = left_out("Above 0; fair-share pools.")
    resource_pool: str | SkipJsonSchema[None] = left_out("Move the job to this pool.")
    ahead_of: str | SkipJsonSchema[None] = left_out("Place it ahead of this job.")
    behind_of: str | SkipJsonSchema[None] = left_out("Place it behind this job.")


class BatchChange(JobChange):
    model_config = ConfigDict(json_schema_extra={"minProperties": 2})

    job_id: str


class JobBatch(Request):
    """Changes to several jobs, applied all together or not at all."""

    updates: list[BatchChange] = Field(min_length=1)


class JobsUpdated(Resource):
    updated: list[str] = Field(description="Ids of the jobs changed.")
