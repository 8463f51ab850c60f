"""What the master answers with: plain, immutable records read inside a transaction.

They carry no database session, so the HTTP layer serialises them without touching
``assay.db``; a write returns the records it changed as they were when it committed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from assay.db import (
    AgentRecord,
    Allocation,
    Checkpoint,
    Experiment,
    Instance,
    Metric,
    Session,
    TaskLog,
    Trial,
    trials,
)
from assay.protocol import (
    AllocationState,
    CheckpointState,
    ExperimentState,
    InstanceState,
    JobState,
    PreemptReason,
    TrialState,
)


@dataclass(frozen=True)
class SearcherSummary:
    name: str | None
    metric: str | None
    smaller_is_better: bool


@dataclass(frozen=True)
class BestTrial:
    """The trial of an experiment with the best searcher metric so far."""

    id: int
    best_validation: float | None
    latest_checkpoint: str | None
    hparams: dict[str, Any]


@dataclass(frozen=True)
class ExperimentSummary:
    """An experiment as experiment lists show it."""

    id: int
    name: str
    description: str
    state: ExperimentState
    archived: bool
    progress: float
    owner: str
    job_id: str
    message: str
    created_at: float
    ended_at: float | None
    seed: int
    searcher: SearcherSummary
    resource_pool: str
    trials: dict[str, int]
    """How many of its trials are in each state."""

    @staticmethod
    def _fields(exp: Experiment, counts: dict[str, int]) -> dict[str, Any]:
        searcher = exp.config.get("searcher", {})
        return {
            "id": exp.id,
            "name": exp.name,
            "description": exp.description,
            "state": ExperimentState(exp.state),
            "archived": exp.archived,
            "progress": exp.progress,
            "owner": exp.owner,
            "job_id": exp.job_id,
            "message": exp.message,
            "created_at": exp.created_at,
            "ended_at": exp.ended_at,
            "seed": exp.seed,
            "searcher": SearcherSummary(
                name=searcher.get("name"),
                metric=searcher.get("metric"),
                smaller_is_better=searcher.get("smaller_is_better", True),
            ),
            "resource_pool": exp.config.get("resources", {}).get("resource_pool", ""),
            "trials": dict(counts),
        }

    @classmethod
    def of(cls, exp: Experiment, counts: dict[str, int]) -> ExperimentSummary:
        return cls(**cls._fields(exp, counts))


@dataclass(frozen=True)
class ExperimentView(ExperimentSummary):
    """One experiment in full: its best trial and its config."""

    best_trial: BestTrial | None
    config: dict[str, Any]
    """The config as validated, with every default filled in."""
    original_config: str
    """The config as it was submitted."""

    @classmethod
    def read(cls, session: Session, exp: Experiment) -> ExperimentView:
        """The experiment with its trial counts and best trial, read in ``session``."""
        counts = trials.counts(session, [exp.id])[exp.id]
        best = trials.best_of(session, exp.id)
        return cls(
            **cls._fields(exp, counts),
            best_trial=None
            if best is None
            else BestTrial(
                id=best.id,
                best_validation=best.best_validation,
                latest_checkpoint=best.latest_checkpoint,
                hparams=best.hparams,
            ),
            config=exp.config,
            original_config=exp.original_config,
        )


@dataclass(frozen=True)
class ExperimentPage:
    experiments: list[ExperimentSummary]
    total: int
    """How many experiments match, over every page."""
    limit: int
    offset: int


@dataclass(frozen=True)
class TrialView:
    id: int
    experiment_id: int
    request_id: str
    state: TrialState
    hparams: dict[str, Any]
    seed: int
    restarts: int
    runs: int
    steps_completed: int
    latest_checkpoint: str | None
    best_validation: float | None
    progress: float
    early_stopped: bool
    early_exit: str | None
    message: str
    created_at: float
    ended_at: float | None

    @staticmethod
    def _fields(trial: Trial) -> dict[str, Any]:
        return {
            "id": trial.id,
            "experiment_id": trial.experiment_id,
            "request_id": trial.request_id,
            "state": TrialState(trial.state),
            "hparams": trial.hparams,
            "seed": trial.seed,
            "restarts": trial.restarts,
            "runs": trial.runs,
            "steps_completed": trial.steps_completed,
            "latest_checkpoint": trial.latest_checkpoint,
            "best_validation": trial.best_validation,
            "progress": trial.progress,
            "early_stopped": trial.early_stopped,
            "early_exit": trial.early_exit,
            "message": trial.message,
            "created_at": trial.created_at,
            "ended_at": trial.ended_at,
        }

    @classmethod
    def of(cls, trial: Trial) -> TrialView:
        return cls(**cls._fields(trial))


@dataclass(frozen=True)
class AllocationView:
    """One run of a trial: where and when it ran, and how it ended."""

    id: str
    run: int
    pool: str
    slots: dict[str, list[str]]
    """Slot ids by agent."""
    state: AllocationState
    preempt: PreemptReason | None
    exit_code: int | None
    exit_reason: str
    created_at: float
    started_at: float | None
    ended_at: float | None

    @classmethod
    def of(cls, alloc: Allocation) -> AllocationView:
        return cls(
            id=alloc.id,
            run=alloc.run,
            pool=alloc.pool,
            slots={agent: list(slots) for agent, slots in (alloc.slots or {}).items()},
            state=AllocationState(alloc.state),
            preempt=PreemptReason(alloc.preempt) if alloc.preempt else None,
            exit_code=alloc.exit_code,
            exit_reason=alloc.exit_reason,
            created_at=alloc.created_at,
            started_at=alloc.started_at,
            ended_at=alloc.ended_at,
        )


@dataclass(frozen=True)
class TrialDetail(TrialView):
    """One trial with all its runs."""

    allocations: list[AllocationView]

    @classmethod
    def with_runs(cls, trial: Trial, runs: list[Allocation]) -> TrialDetail:
        return cls(**cls._fields(trial), allocations=[AllocationView.of(a) for a in runs])


@dataclass(frozen=True)
class CheckpointView:
    uuid: str
    trial_id: int
    experiment_id: int
    allocation_id: str | None
    steps_completed: int
    metadata: dict[str, Any]
    resources: dict[str, Any]
    size: int
    state: CheckpointState
    reported_at: float

    @classmethod
    def of(cls, ckpt: Checkpoint) -> CheckpointView:
        return cls(
            uuid=ckpt.uuid,
            trial_id=ckpt.trial_id,
            experiment_id=ckpt.experiment_id,
            allocation_id=ckpt.allocation_id,
            steps_completed=ckpt.steps_completed,
            metadata=ckpt.meta,
            resources=ckpt.resources,
            size=ckpt.size,
            state=CheckpointState(ckpt.state),
            reported_at=ckpt.reported_at,
        )


@dataclass(frozen=True)
class MetricView:
    """One report of one metric group at one step."""

    trial_id: int
    run: int
    group: str
    steps_completed: int
    metrics: dict[str, Any]
    """Values by name; NaN and infinities as the strings ``nan``, ``inf``, ``-inf``."""
    time: float
    archived: bool
    """Reported by a run that a later run, resumed from an earlier step, superseded."""

    @classmethod
    def of(cls, m: Metric) -> MetricView:
        return cls(
            trial_id=m.trial_id,
            run=m.run,
            group=m.group,
            steps_completed=m.steps_completed,
            metrics=m.values,
            time=m.reported_at,
            archived=m.archived,
        )


@dataclass(frozen=True)
class LogLine:
    id: int
    trial_id: int
    allocation_id: str
    rank: int
    stream: str
    time: float
    line: str

    @classmethod
    def of(cls, entry: TaskLog) -> LogLine:
        return cls(
            id=entry.id,
            trial_id=entry.trial_id,
            allocation_id=entry.allocation_id,
            rank=entry.rank,
            stream=entry.stream,
            time=entry.time,
            line=entry.line,
        )


@dataclass(frozen=True)
class TrialLogs:
    lines: list[LogLine]
    trial_ended: bool
    """The trial had ended when the lines were read: no line will follow the last one."""


@dataclass(frozen=True)
class SlotUse:
    id: str
    type: str
    uuid: str
    name: str
    allocated: bool
    """A live allocation holds it."""


@dataclass(frozen=True)
class AgentSummary:
    id: str
    pool: str
    labels: list[str]
    enabled: bool
    connected: bool
    address: str
    version: str
    slots: list[SlotUse]
    registered_at: float
    last_seen: float

    @classmethod
    def of(cls, agent: AgentRecord, *, connected: bool, used: set[str]) -> AgentSummary:
        return cls(
            id=agent.id,
            pool=agent.pool,
            labels=[str(label) for label in agent.labels],
            enabled=agent.enabled,
            connected=connected,
            address=agent.address,
            version=agent.version,
            slots=[
                SlotUse(
                    id=str(s.get("id")),
                    type=str(s.get("type", "cpu")),
                    uuid=str(s.get("uuid", "")),
                    name=str(s.get("name", "")),
                    allocated=str(s.get("id")) in used,
                )
                for s in agent.slots
            ],
            registered_at=agent.registered_at,
            last_seen=agent.last_seen,
        )


@dataclass(frozen=True)
class InstanceView:
    id: str
    pool: str
    state: InstanceState
    launched_at: float
    idle_since: float | None
    ended_at: float | None
    message: str

    @classmethod
    def of(cls, row: Instance) -> InstanceView:
        return cls(
            id=row.id,
            pool=row.pool,
            state=InstanceState(row.state),
            launched_at=row.launched_at,
            idle_since=row.idle_since,
            ended_at=row.ended_at,
            message=row.message,
        )


@dataclass(frozen=True)
class PoolView:
    name: str
    description: str
    scheduler: str
    preemption: bool
    agents: int
    """Agents connected now."""
    slots: int
    """Their slots."""
    instances: list[InstanceView]
    """Machines its autoscaling provider runs (empty without a provider)."""


@dataclass(frozen=True)
class QueuedJob:
    position: int
    id: str
    type: str
    name: str
    experiment_id: int
    priority: int
    weight: float
    max_slots: int | None
    submitted_at: float
    slots_acquired: int
    slots_needed: int
    status: JobState
    user: str
    resource_pool: str


@dataclass(frozen=True)
class JobQueue:
    resource_pool: str
    scheduler: str
    jobs: list[QueuedJob]
    """In scheduling order."""


@dataclass(frozen=True)
class MasterInfo:
    version: str
    cluster_id: str
    started_at: float
    database: str
    """``sqlite`` or ``postgresql``."""
