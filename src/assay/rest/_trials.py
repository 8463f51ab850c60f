"""Trials and what hangs off them: allocations, metrics, checkpoints, logs."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from assay.protocol import AllocationState, CheckpointState, ExitedReason, PreemptReason, TrialState
from assay.rest._common import NO_NUL, DbInt, Request, Resource, Waiting
from assay.rest._plain import Pagination


class Metric(Resource):
    """One report of one metric group at one step."""

    trial_id: int
    run: int
    group: str = Field(description="training, validation, or a group the code named.")
    steps_completed: int
    metrics: dict[str, Any] = Field(
        description="Values by name; non-finite numbers as the strings nan, inf, -inf."
    )
    time: float
    archived: bool = Field(description="Reported by a run whose steps were later redone.")


class Trial(Resource):
    id: int
    experiment_id: int
    request_id: str = Field(description="The searcher's name for the trial.")
    state: TrialState
    hparams: dict[str, Any]
    seed: int
    restarts: int = Field(
        description="How often it failed on its own (what max_restarts bounds; the last "
        "failure counts too)."
    )
    infra_restarts: int = Field(
        default=0,
        description="How often it was started again after losing its agent (lost past its "
        "grace, stopped, or back without it): the cluster's losses, never counted toward "
        "max_restarts.",
    )
    runs: int = Field(description="How many times it was started (restarts and resumptions).")
    steps_completed: int = Field(
        description="Steps (batches) trained in its current line of training: the most any "
        "report or checkpoint of it has said since the checkpoint its latest run resumed from."
    )
    latest_checkpoint: str | None = Field(description="uuid of its latest checkpoint.")
    best_validation: float | None = Field(description="Its best searcher metric so far.")
    progress: float
    early_stopped: bool = Field(description="Its searcher closed it before its full length.")
    early_exit: ExitedReason | None = Field(
        description="Why its code stopped on its own, if it did."
    )
    waiting_at: str | None = Field(
        default=None,
        description="While it is WAITING: where its searcher holds it, such as `rung 2 of 4` "
        "(an ASHA trial waiting for promotion); null otherwise, or when the search has no "
        "stages.",
    )
    message: str
    created_at: float
    started_at: float | None = Field(
        description="When its first run started running; null while it waits for slots."
    )
    ended_at: float | None
    ran_until: float | None = Field(
        default=None,
        description="While no run of it is live and it has not ended (PAUSED, WAITING, queued "
        "again): when its latest run ended, where its running time stops; null otherwise.",
    )
    latest_training: Metric | None = Field(
        default=None, description="Its latest training report, by step."
    )
    latest_validation: Metric | None = Field(
        default=None, description="Its latest validation report, by step."
    )
    waiting: Waiting = None


class Allocation(Resource):
    """One run of a trial on concrete slots; a restart or resumption is a new one."""

    id: str
    run: int
    pool: str
    slots: dict[str, list[str]] = Field(description="Slot ids by agent id.")
    state: AllocationState
    preempt: PreemptReason | None = Field(description="Why it was asked to stop, if it was.")
    exit_code: int | None
    exit_reason: str
    lost: bool = Field(
        default=False,
        description="Its processes were lost with their agent: the cluster's loss, not the "
        "trial's failure.",
    )
    created_at: float
    started_at: float | None
    ended_at: float | None


class TrialDetail(Trial):
    """A trial with its allocations, oldest first."""

    allocations: list[Allocation]


class TrialList(Resource):
    trials: list[Trial] = Field(description="In the order asked for; by id by default.")
    pagination: Pagination | None = Field(
        default=None, description="How many match over all pages (the page asked for)."
    )


class MetricList(Resource):
    metrics: list[Metric]


MAX_SERIES_TRIALS = 1000
"""The most trials one read of learning curves covers."""


class MetricSeries(Resource):
    """One metric of one trial by step: its numeric values only (a non-finite one is left
    out), downsampled to evenly spaced reports, the first and last kept, when longer than
    asked."""

    trial_id: int
    steps: list[int]
    values: list[float]
    times: list[float] | None = Field(
        default=None,
        description="When each point was reported (seconds since the epoch), where asked for "
        "(`times=true`: time on the x-axis); null otherwise.",
    )


class MetricSeriesList(Resource):
    """Learning curves of several trials at once: one metric of one group for each."""

    names: list[str] = Field(
        description="Every numeric metric the trials reported, as group/name, sorted."
    )
    group: str
    metric: str
    series: list[MetricSeries] = Field(description="One per trial asked, in the order asked.")


class ModelVersionRef(Resource):
    """A model version, by the model's name and the version's number."""

    model: str
    version: int


class Checkpoint(Resource):
    """A checkpoint: a directory in its experiment's checkpoint storage. Its files are served
    by ``GET /api/v1/checkpoints/{uuid}/files``."""

    uuid: str
    trial_id: int
    experiment_id: int
    allocation_id: str | None
    steps_completed: int
    metadata: dict[str, Any]
    resources: dict[str, int] = Field(description="File sizes by path inside the checkpoint.")
    size: int = Field(description="Total size in bytes.")
    state: CheckpointState
    reported_at: float
    model_versions: list[ModelVersionRef] = Field(
        default_factory=list,
        description="The model versions that hold it (it is never garbage-collected while "
        "one does), by model name and version.",
    )


class CheckpointList(Resource):
    checkpoints: list[Checkpoint]


CheckpointUuid = Annotated[str, Field(min_length=1, max_length=64, pattern=NO_NUL)]


class CheckpointDelete(Request):
    """Checkpoints to delete, by uuid: files from storage first, then each row marked DELETED.

    Refused as a whole (nothing deleted) when one is unknown, not the caller's (or an
    admin's) to delete, or still needed: the latest checkpoint of a trial that has not ended
    (a restart resumes from it) or one a trial that has not ended starts from."""

    uuids: Annotated[list[CheckpointUuid], Field(min_length=1, max_length=10_000)]
    dry_run: bool = Field(
        default=False,
        description="Only check: refused as the deletion would be; otherwise nothing is "
        "deleted and `checkpoints` lists them as they are.",
    )


class CheckpointsDeleted(Resource):
    checkpoints: list[Checkpoint] = Field(
        description="Deleted (state DELETED), including any that already were."
    )
    failed: dict[str, str] = Field(
        description="Checkpoints whose files could not be deleted, by uuid, with the reason; "
        "they are left as they were."
    )


class LogEntry(Resource):
    id: int = Field(description="Increasing; ask for lines after the last one seen.")
    trial_id: int
    allocation_id: str
    rank: int
    stream: str = Field(description="stdout or stderr.")
    time: float
    line: str


class LogPage(Resource):
    logs: list[LogEntry]


class GcPolicy(Request):
    """A garbage-collection policy to run on an experiment now (and keep for its end): a
    checkpoint is kept if it is among the experiment's best N, its trial's best N or its
    trial's latest N. An omitted number keeps the experiment's current one."""

    save_experiment_best: DbInt | None = None
    save_trial_best: DbInt | None = None
    save_trial_latest: DbInt | None = None
    dry_run: bool = Field(
        default=False, description="Only say what would be deleted; change nothing."
    )
    uuids: (
        Annotated[list[Annotated[str, Field(max_length=64)]], Field(max_length=100_000)] | None
    ) = Field(
        default=None,
        description="Delete only these of the checkpoints the policy does not keep (what a "
        "dry run showed), so nothing reported since is deleted unseen.",
    )


class CollectedCheckpoint(Checkpoint):
    metric: float | None = Field(
        description="The searcher metric of the validation at the checkpoint's step, if any."
    )


class GcResult(Resource):
    save_experiment_best: int
    save_trial_best: int
    save_trial_latest: int
    dry_run: bool
    checkpoints: list[CollectedCheckpoint] = Field(
        description="Deleted (or, on a dry run, to be deleted), by trial and step."
    )
    failed: dict[str, str] = Field(
        description="Checkpoints whose files could not be deleted, by uuid, with the reason; "
        "they are left as they were."
    )
    registered: dict[str, list[ModelVersionRef]] = Field(
        default_factory=dict,
        description="Checkpoints the policy does not keep that are kept anyway because model "
        "versions hold them, by uuid.",
    )
