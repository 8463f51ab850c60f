"""SQLAlchemy models: the tables of the master's database.

Times are seconds since the epoch (floats): cheap to compare and sort on both SQLite and
PostgreSQL, and the API formats them. JSON columns hold configs, hyperparameters, metric values
and searcher snapshots.
"""

from __future__ import annotations

import math
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

from assay.db._writers import guard_wanted, guard_writers


def finite_json(value: Any) -> Any:
    """``value`` with every NaN and infinity, at any depth, replaced by the string Python writes
    for it ("nan", "inf", "-inf"): JSON has no such numbers and PostgreSQL refuses them, while
    training code reports them (a diverged loss) in metrics and checkpoint metadata."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {str(k): finite_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite_json(v) for v in value]
    return value


class Json(TypeDecorator[Any]):
    """A JSON column that stores :func:`finite_json` of what it is given."""

    impl = JSON
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        return finite_json(value)


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: Json(none_as_null=True), list[Any]: Json}


class Context(Base):
    """A context directory as uploaded (tar.gz), shared by experiments with the same content."""

    __tablename__ = "contexts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    sha256: Mapped[str] = mapped_column(String(64), unique=True)
    size: Mapped[int] = mapped_column(Integer)
    files: Mapped[int] = mapped_column(Integer)
    # Up to 95 MiB: loaded only where read (an agent's download), not with every trial start.
    data: Mapped[bytes] = mapped_column(LargeBinary, deferred=True)
    created_at: Mapped[float] = mapped_column(Float)


class Job(Base):
    """What the queue orders: an experiment (or, later, a generic task)."""

    __tablename__ = "jobs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    type: Mapped[str] = mapped_column(String(32))
    name: Mapped[str] = mapped_column(String(256))
    pool: Mapped[str] = mapped_column(String(128))
    priority: Mapped[int] = mapped_column(Integer)
    weight: Mapped[float] = mapped_column(Float)
    max_slots: Mapped[int | None] = mapped_column(Integer, nullable=True)
    queue_position: Mapped[float] = mapped_column(Float)
    submitted_at: Mapped[float] = mapped_column(Float)
    owner: Mapped[str] = mapped_column(String(128))
    done: Mapped[bool] = mapped_column(Boolean, default=False)

    __table_args__ = (Index("ix_jobs_pool_done", "pool", "done"),)


class Experiment(Base):
    __tablename__ = "experiments"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(256))
    description: Mapped[str] = mapped_column(Text, default="")
    state: Mapped[str] = mapped_column(String(32))
    archived: Mapped[bool] = mapped_column(Boolean, default=False)
    config: Mapped[dict[str, Any]] = mapped_column(Json)
    original_config: Mapped[str] = mapped_column(Text)
    source: Mapped[str] = mapped_column(String(16), default="assay", server_default="assay")
    """How its config was written: ``assay`` (Determined's format), ``nni-v2`` or ``nni-v1``.
    An NNI experiment ranks its trials by their final results, as NNI does."""
    context_id: Mapped[int] = mapped_column(ForeignKey("contexts.id"))
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"))
    seed: Mapped[int] = mapped_column(Integer)
    searcher_seq: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """The sequence number of the searcher's last event (0: none yet)."""
    searcher_snapshot_seq: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """The last event its snapshot (``searcher_snapshots``) includes: replay starts after it."""
    progress: Mapped[float] = mapped_column(Float, default=0.0)
    owner: Mapped[str] = mapped_column(String(128))
    message: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[float] = mapped_column(Float)
    started_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    """When the first of its trials started running (None until then)."""
    ended_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    active_seconds: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    """Seconds the experiment was ACTIVE before ``active_since`` (what ``max_duration``
    counts: a pause stops the clock)."""
    active_since: Mapped[float | None] = mapped_column(Float, nullable=True)
    """When it last became ACTIVE; None while it is not (or not yet counted)."""

    __table_args__ = (
        Index("ix_experiments_state", "state"),
        Index("ix_experiments_archived_id", "archived", "id"),
        # What the experiment list sorts on (migration 0010).
        Index("ix_experiments_name", "name"),
        Index("ix_experiments_owner", "owner"),
        Index("ix_experiments_created_at", "created_at"),
        Index("ix_experiments_ended_at", "ended_at"),
    )


class ExperimentNote(Base):
    """A line of the experiment's own log: what the master decided about it (a tuner mapped,
    keys ignored, a time limit reached)."""

    __tablename__ = "experiment_notes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    experiment_id: Mapped[int] = mapped_column(ForeignKey("experiments.id"))
    time: Mapped[float] = mapped_column(Float)
    text: Mapped[str] = mapped_column(Text)

    __table_args__ = (Index("ix_experiment_notes_experiment", "experiment_id", "id"),)


class SearcherSnapshot(Base):
    """An experiment's searcher as of its last compaction; the events after it are in
    ``searcher_events``. A row of its own: a long search's snapshot runs to megabytes, which
    the experiment's row would parse on every load and copy on every update (SQLite rewrites
    a whole row)."""

    __tablename__ = "searcher_snapshots"

    experiment_id: Mapped[int] = mapped_column(ForeignKey("experiments.id"), primary_key=True)
    state: Mapped[dict[str, Any]] = mapped_column(Json)


class SearcherEvent(Base):
    """One event the experiment's searcher handled since its last snapshot, in order: the
    snapshot plus these rebuild it exactly (the search methods are pure)."""

    __tablename__ = "searcher_events"

    experiment_id: Mapped[int] = mapped_column(ForeignKey("experiments.id"), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    event: Mapped[dict[str, Any]] = mapped_column(Json)


class Trial(Base):
    __tablename__ = "trials"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    experiment_id: Mapped[int] = mapped_column(ForeignKey("experiments.id"))
    request_id: Mapped[str] = mapped_column(String(64))
    hparams: Mapped[dict[str, Any]] = mapped_column(Json)
    seed: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(32))
    restarts: Mapped[int] = mapped_column(Integer, default=0)
    """Its own failures: what ``max_restarts`` bounds."""
    infra_restarts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """How often it was started again after losing its agent (never toward ``max_restarts``)."""
    lost_in_row: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """Its agent losses since one of its runs last saved a checkpoint (what bounds a trial that
    keeps losing its agent)."""
    runs: Mapped[int] = mapped_column(Integer, default=0)
    steps_completed: Mapped[int] = mapped_column(Integer, default=0)
    latest_checkpoint: Mapped[str | None] = mapped_column(String(64), nullable=True)
    source_checkpoint: Mapped[str | None] = mapped_column(String(64), nullable=True)
    best_validation: Mapped[float | None] = mapped_column(Float, nullable=True)
    # The searcher metric normalised so smaller is better; what "best trial" sorts on.
    best_score: Mapped[float | None] = mapped_column(Float, nullable=True)
    progress: Mapped[float] = mapped_column(Float, default=0.0)
    early_stopped: Mapped[bool] = mapped_column(Boolean, default=False)
    early_exit: Mapped[str | None] = mapped_column(String(32), nullable=True)
    waiting_at: Mapped[str | None] = mapped_column(String(64), nullable=True)
    """Where its searcher last released it to wait (``rung 2 of 4``): shown while it is
    WAITING; None when the search has no stages."""
    message: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[float] = mapped_column(Float)
    started_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    """When its first run started running (None while it waits for slots)."""
    ended_at: Mapped[float | None] = mapped_column(Float, nullable=True)

    __table_args__ = (
        UniqueConstraint("experiment_id", "request_id"),
        Index("ix_trials_experiment_state", "experiment_id", "state"),
        # Best first with ties by id, read off the index (the trials page; migration 0010).
        Index("ix_trials_experiment_score_id", "experiment_id", "best_score", "id"),
        Index("ix_trials_experiment_steps", "experiment_id", "steps_completed"),
        Index("ix_trials_state", "state"),
    )


class Allocation(Base):
    """One run of a trial on concrete slots; a restart is a new allocation."""

    __tablename__ = "allocations"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    trial_id: Mapped[int] = mapped_column(ForeignKey("trials.id"))
    run: Mapped[int] = mapped_column(Integer)
    pool: Mapped[str] = mapped_column(String(128))
    slots: Mapped[dict[str, Any]] = mapped_column(Json)
    slot_count: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """How many slots ``slots`` lists: what the job queue sums, in SQL."""
    state: Mapped[str] = mapped_column(String(32))
    token: Mapped[str] = mapped_column(String(64), unique=True)
    preempt: Mapped[str | None] = mapped_column(String(32), nullable=True)
    preempt_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    # Exit codes by agent for allocations spanning several agents (``{agent_id: code}``).
    exits: Mapped[dict[str, Any]] = mapped_column(Json, default=dict)
    # The port rank 0 listens on for the processes of a distributed trial to meet.
    rendezvous_port: Mapped[int | None] = mapped_column(Integer, nullable=True)
    kill_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    """A user killed it (its trial ends CANCELED)."""
    overdue: Mapped[bool] = mapped_column(Boolean, default=False)
    """It outlived its preemption timeout and was killed; its trial goes where the
    preemption sent it, as if it had stopped in time."""
    released: Mapped[bool] = mapped_column(Boolean, default=False)
    timed_out: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    """Killed because its trial ran longer than ``max_trial_duration``."""
    lost: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    """Its processes were lost with an agent (lost past its grace, stopped, or back without
    them) before any of them failed on their own: the cluster's loss, not the trial's."""
    exit_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    exit_reason: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[float] = mapped_column(Float)
    started_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    ended_at: Mapped[float | None] = mapped_column(Float, nullable=True)

    __table_args__ = (
        Index("ix_allocations_trial", "trial_id"),
        Index("ix_allocations_state", "state"),
    )


class AllocationOwner(Base):
    """Every allocation of every kind of work, and the kind that owns it (``trial``,
    ``task``...): how the master tells which kind an agent's report is for. The kind's own
    rows (``allocations`` for a trial's, ``task_instances`` for a task's) hold the rest."""

    __tablename__ = "allocation_owners"

    id: Mapped[str] = mapped_column(String(128), primary_key=True)
    kind: Mapped[str] = mapped_column(String(32))
    created_at: Mapped[float] = mapped_column(Float)


class Metric(Base):
    """One report of one metric group at one step. The unique key makes retries harmless."""

    __tablename__ = "metrics"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    trial_id: Mapped[int] = mapped_column(ForeignKey("trials.id"))
    run: Mapped[int] = mapped_column(Integer)
    group: Mapped[str] = mapped_column(String(64))
    steps_completed: Mapped[int] = mapped_column(Integer)
    values: Mapped[dict[str, Any]] = mapped_column(Json)
    reported_at: Mapped[float] = mapped_column(Float)
    archived: Mapped[bool] = mapped_column(Boolean, default=False)

    __table_args__ = (
        UniqueConstraint("trial_id", "run", "group", "steps_completed", name="uq_metric_report"),
        Index("ix_metrics_trial_group_steps", "trial_id", "group", "steps_completed"),
    )


class Checkpoint(Base):
    __tablename__ = "checkpoints"

    uuid: Mapped[str] = mapped_column(String(64), primary_key=True)
    trial_id: Mapped[int] = mapped_column(ForeignKey("trials.id"))
    experiment_id: Mapped[int] = mapped_column(ForeignKey("experiments.id"))
    allocation_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    steps_completed: Mapped[int] = mapped_column(Integer)
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", Json)
    resources: Mapped[dict[str, Any]] = mapped_column(Json)
    size: Mapped[int] = mapped_column(BigInteger, default=0)
    state: Mapped[str] = mapped_column(String(16))
    reported_at: Mapped[float] = mapped_column(Float)

    __table_args__ = (
        Index("ix_checkpoints_trial_steps", "trial_id", "steps_completed"),
        Index("ix_checkpoints_experiment", "experiment_id"),
    )


class Model(Base):
    """A named entry of the model registry: it holds versions, each one checkpoint."""

    __tablename__ = "models"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    labels: Mapped[list[Any]] = mapped_column(Json, default=list)
    owner: Mapped[str] = mapped_column(String(128))
    versions_made: Mapped[int] = mapped_column(Integer, default=0)
    """The highest version number given so far: a version's number is never reused, so a
    number once downloaded always means the same checkpoint or nothing."""
    created_at: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)


class ModelVersion(Base):
    """One version of a model: a checkpoint it holds. A checkpoint held by a version is never
    garbage-collected."""

    __tablename__ = "model_versions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    model_id: Mapped[int] = mapped_column(ForeignKey("models.id", ondelete="CASCADE"))
    version: Mapped[int] = mapped_column(Integer)
    checkpoint_uuid: Mapped[str] = mapped_column(ForeignKey("checkpoints.uuid"))
    name: Mapped[str] = mapped_column(String(256), default="")
    comment: Mapped[str] = mapped_column(Text, default="")
    owner: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[float] = mapped_column(Float)

    __table_args__ = (
        UniqueConstraint("model_id", "version", name="uq_model_versions_model_version"),
        Index("ix_model_versions_checkpoint", "checkpoint_uuid"),
    )


class Task(Base):
    """A job that is not an experiment: an OpenPAI job, a command or a generic task. Its spec
    is :class:`assay.config.JobSpec` as JSON, without the secrets, which are kept apart."""

    __tablename__ = "tasks"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"))
    kind: Mapped[str] = mapped_column(String(16))
    name: Mapped[str] = mapped_column(String(256))
    owner: Mapped[str] = mapped_column(String(128))
    job_name: Mapped[str | None] = mapped_column(String(256), nullable=True)
    """``name``, for the OpenPAI job that ``owner~name`` names: unique per owner (the index
    below), so two submissions of one name cannot both pass. Null for commands and generic
    tasks (their names may repeat), and for the older jobs of a name that an earlier version
    let a newer job of the same owner take over (kept, under their own ids)."""
    state: Mapped[str] = mapped_column(String(16))
    spec: Mapped[dict[str, Any]] = mapped_column(Json)
    secrets: Mapped[dict[str, Any]] = mapped_column(Json, default=dict)
    context_id: Mapped[int | None] = mapped_column(ForeignKey("contexts.id"), nullable=True)
    attempt: Mapped[int] = mapped_column(Integer, default=0)
    """The job's retries used so far (``jobRetryCount``)."""
    retrying: Mapped[bool] = mapped_column(Boolean, default=False)
    """The attempt failed and a retry is left: it starts again once every instance ended."""
    stop_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    exit_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    message: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[float] = mapped_column(Float)
    started_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    ended_at: Mapped[float | None] = mapped_column(Float, nullable=True)

    __table_args__ = (
        Index("ix_tasks_state", "state"),
        Index("ix_tasks_owner_name", "owner", "name"),
        Index("uq_tasks_owner_job_name", "owner", "job_name", unique=True),
    )


class TaskInstance(Base):
    """One instance of a task role; its current (or last) run is the allocation it names."""

    __tablename__ = "task_instances"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    task_id: Mapped[int] = mapped_column(ForeignKey("tasks.id"))
    role: Mapped[str] = mapped_column(String(128))
    index: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(16))
    retries: Mapped[int] = mapped_column(Integer, default=0)
    """Retries of this instance used in the current attempt (``taskRetryCount``)."""
    runs: Mapped[int] = mapped_column(Integer, default=0)
    allocation_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    live: Mapped[bool] = mapped_column(Boolean, default=False)
    """A process of it is starting or running on ``agent_id``."""
    started: Mapped[bool] = mapped_column(Boolean, default=False)
    """The agent said the current run's process started."""
    kill_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    agent_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    host: Mapped[str] = mapped_column(String(256), default="")
    slots: Mapped[list[Any]] = mapped_column(Json, default=list)
    ports: Mapped[dict[str, Any]] = mapped_column(Json, default=dict)
    cpu: Mapped[float] = mapped_column(Float, default=0.0)
    memory_mb: Mapped[int] = mapped_column(Integer, default=0)
    exit_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    message: Mapped[str] = mapped_column(Text, default="")
    started_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    ended_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    token_digest: Mapped[str | None] = mapped_column(String(64), nullable=True)
    """The SHA-256 of the current run's token (its ``DET_USER_TOKEN``): Determined's API takes
    the token as the task's owner while the run lives. Only the digest is kept."""

    __table_args__ = (
        UniqueConstraint("task_id", "role", "index"),
        Index("ix_task_instances_live", "live"),
        Index("ix_task_instances_allocation", "allocation_id"),
        Index("ix_task_instances_token", "token_digest"),
    )


class TaskLog(Base):
    __tablename__ = "task_logs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    trial_id: Mapped[int] = mapped_column(Integer)
    """0 for the lines of jobs that are not experiments (``task_id`` says whose)."""
    task_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    allocation_id: Mapped[str] = mapped_column(String(64))
    rank: Mapped[int] = mapped_column(Integer, default=0)
    stream: Mapped[str] = mapped_column(String(8))
    time: Mapped[float] = mapped_column(Float)
    line: Mapped[str] = mapped_column(Text)

    __table_args__ = (
        Index("ix_task_logs_trial_id", "trial_id", "id"),
        Index("ix_task_logs_task_id", "task_id", "id"),
    )


class AgentRecord(Base):
    __tablename__ = "agents"

    id: Mapped[str] = mapped_column(String(128), primary_key=True)
    pool: Mapped[str] = mapped_column(String(128))
    labels: Mapped[list[Any]] = mapped_column(Json)
    slots: Mapped[list[Any]] = mapped_column(Json)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    connected: Mapped[bool] = mapped_column(Boolean, default=False)
    address: Mapped[str] = mapped_column(String(256), default="")
    version: Mapped[str] = mapped_column(String(64), default="")
    registered_at: Mapped[float] = mapped_column(Float)
    last_seen: Mapped[float] = mapped_column(Float)
    container_runtime: Mapped[str] = mapped_column(String(32), default="", server_default="")
    """The runtime it last said it runs containers with; empty: none."""


class Instance(Base):
    """A machine an autoscaling provider launched for a pool; its agent takes its id."""

    __tablename__ = "instances"

    id: Mapped[str] = mapped_column(String(128), primary_key=True)
    pool: Mapped[str] = mapped_column(String(128))
    state: Mapped[str] = mapped_column(String(32))
    launched_at: Mapped[float] = mapped_column(Float)
    idle_since: Mapped[float | None] = mapped_column(Float, nullable=True)
    ended_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    message: Mapped[str] = mapped_column(Text, default="")

    __table_args__ = (Index("ix_instances_pool_state", "pool", "state"),)


class ClusterRecord(Base):
    """One row: the cluster's identity, made on first start, and the agent token its masters
    made (unless they are given one), so every master of a shared database takes the same."""

    __tablename__ = "cluster"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    created_at: Mapped[float] = mapped_column(Float)
    agent_token: Mapped[str | None] = mapped_column(String(128), nullable=True)


class IdFloor(Base):
    """The highest id a deleted row of a table had. SQLite gives a new row the largest id in
    use plus one, so deleting the newest experiment would hand its id to the next; ids are
    assigned above this floor instead (PostgreSQL's sequences never go back)."""

    __tablename__ = "id_floors"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[int] = mapped_column(BigInteger)


class User(Base):
    """Someone who signs in: owns the experiments and jobs they submit."""

    __tablename__ = "users"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    username: Mapped[str] = mapped_column(String(64), unique=True)
    password_hash: Mapped[str] = mapped_column(String(256))
    det_password_hash: Mapped[str | None] = mapped_column(String(256), nullable=True)
    """An argon2 hash of what Determined's clients send for the password (its salted SHA-512),
    so ``det user login`` signs in without the master ever keeping anything weaker; None for
    a user whose password was last set before the column (until they next sign in)."""
    admin: Mapped[bool] = mapped_column(Boolean, default=False)
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[float] = mapped_column(Float)


class Token(Base):
    """A bearer token of a user: a session from signing in, or a long-lived access token for
    scripts. Only the token's SHA-256 is stored, so a copy of the database signs no one in."""

    __tablename__ = "tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    kind: Mapped[str] = mapped_column(String(16))
    description: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[float] = mapped_column(Float)
    expires_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    revoked_at: Mapped[float | None] = mapped_column(Float, nullable=True)

    __table_args__ = (Index("ix_tokens_user", "user_id"),)


if guard_wanted():
    guard_writers(Base)
