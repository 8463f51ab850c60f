"""Experiments as Determined's clients send and read them (``v1Experiment``,
``v1CreateExperimentRequest``, ``v1PatchExperiment``...), and what each of assay's experiment
states is called there."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Annotated, Any

import yaml
from pydantic import ConfigDict, Field

from assay import rest
from assay.errors import InvalidRequest
from assay.protocol import ExperimentState
from assay.rest._common import Resource
from assay.rest.determined._checkpoints import checkpoint_state
from assay.rest.determined._common import DetRequest, DetResource, Pagination, timestamp

MAX_CONTEXT_FILES = 100_000
"""The most files and directories a context sent as files may list: the most any context may
hold (``assay.context.MAX_MEMBERS``, which a unit test holds this to)."""

DEFAULT_PROJECT_ID = 1
"""The one project (and workspace) every experiment is in: assay has neither, and Determined's
clients name experiments by id alone, showing a project's name only on request."""

DEFAULT_PROJECT = "Uncategorized"
"""What Determined calls its default workspace and project, the ones assay's experiments show."""


class DetExperimentState(StrEnum):
    """``experimentv1State``: assay's states with Determined's prefix, and the ones only
    Determined has (deleting; an experiment's job queued or pulling), which assay's master
    never answers but its clients send as filters."""

    UNSPECIFIED = "STATE_UNSPECIFIED"
    ACTIVE = "STATE_ACTIVE"
    PAUSED = "STATE_PAUSED"
    STOPPING_COMPLETED = "STATE_STOPPING_COMPLETED"
    STOPPING_CANCELED = "STATE_STOPPING_CANCELED"
    STOPPING_ERROR = "STATE_STOPPING_ERROR"
    COMPLETED = "STATE_COMPLETED"
    CANCELED = "STATE_CANCELED"
    ERROR = "STATE_ERROR"
    DELETED = "STATE_DELETED"
    DELETING = "STATE_DELETING"
    DELETE_FAILED = "STATE_DELETE_FAILED"
    STOPPING_KILLED = "STATE_STOPPING_KILLED"
    QUEUED = "STATE_QUEUED"
    PULLING = "STATE_PULLING"
    STARTING = "STATE_STARTING"
    RUNNING = "STATE_RUNNING"

    @classmethod
    def of(cls, state: ExperimentState) -> DetExperimentState:
        return cls(f"STATE_{state.value}")

    @property
    def assay(self) -> tuple[ExperimentState, ...]:
        """The assay states this filter matches: queued, pulling, starting and running are
        parts of ACTIVE there, and none is deleting or deleted (a deleted experiment is gone)."""
        if self in (self.QUEUED, self.PULLING, self.STARTING, self.RUNNING):
            return (ExperimentState.ACTIVE,)
        name = self.value.removeprefix("STATE_")
        return (ExperimentState(name),) if name in ExperimentState.__members__ else ()


class Experiment(DetResource):
    """``v1Experiment``."""

    id: int
    name: str
    description: str = ""
    labels: list[str] = Field(default_factory=list)
    start_time: str = Field(description="When it was created, RFC 3339.")
    end_time: str | None = None
    state: DetExperimentState
    archived: bool
    num_trials: int
    trial_ids: list[int] = Field(default_factory=list)
    username: str
    user_id: int | None = None
    resource_pool: str
    searcher_type: str
    searcher_metric: str | None = None
    best_trial_id: int | None = None
    best_trial_searcher_metric: float | None = None
    notes: str | None = Field(default=None, description="assay keeps no notes on experiments.")
    job_id: str
    forked_from: int | None = None
    progress: float | None = None
    project_id: int = DEFAULT_PROJECT_ID
    project_name: str = DEFAULT_PROJECT
    workspace_id: int = DEFAULT_PROJECT_ID
    workspace_name: str = DEFAULT_PROJECT
    parent_archived: bool = False
    project_owner_id: int = DEFAULT_PROJECT_ID
    config: dict[str, Any]
    original_config: str
    duration: int | None = Field(default=None, description="Milliseconds it has run.")
    unmanaged: bool = False


class GetExperimentResponse(DetResource):
    """``GET /api/v1/experiments/{experimentId}``."""

    experiment: Experiment
    config: dict[str, Any]


class GetExperimentsResponse(DetResource):
    """``GET /api/v1/experiments``: a page of experiments."""

    experiments: list[Experiment]
    pagination: Pagination


class ExperimentSortBy(StrEnum):
    """``v1GetExperimentsRequestSortBy``, each with the sort of assay's list it is (None:
    assay's list has no such order)."""

    UNSPECIFIED = "SORT_BY_UNSPECIFIED"
    ID = "SORT_BY_ID"
    DESCRIPTION = "SORT_BY_DESCRIPTION"
    START_TIME = "SORT_BY_START_TIME"
    END_TIME = "SORT_BY_END_TIME"
    STATE = "SORT_BY_STATE"
    NUM_TRIALS = "SORT_BY_NUM_TRIALS"
    PROGRESS = "SORT_BY_PROGRESS"
    USER = "SORT_BY_USER"
    NAME = "SORT_BY_NAME"
    FORKED_FROM = "SORT_BY_FORKED_FROM"
    RESOURCE_POOL = "SORT_BY_RESOURCE_POOL"
    PROJECT_ID = "SORT_BY_PROJECT_ID"
    CHECKPOINT_SIZE = "SORT_BY_CHECKPOINT_SIZE"
    CHECKPOINT_COUNT = "SORT_BY_CHECKPOINT_COUNT"
    SEARCHER_METRIC_VAL = "SORT_BY_SEARCHER_METRIC_VAL"


class File(DetRequest):
    """``v1File``: one file or directory of the context, as the client read it."""

    path: Annotated[str, Field(max_length=4096)]
    type: int = Field(description="tar's type flag as a number: 48 a file, 53 a directory.")
    content: str = Field(default="", description="The file's bytes, base64.")
    mtime: int | str = Field(default=0, description="Seconds since the epoch (int64 as text).")
    mode: int = 0o644
    uid: int = 0
    gid: int = 0


class CreateExperiment(DetRequest):
    """``POST /api/v1/experiments`` (``det experiment create``, ``client.create_experiment``):
    the config as YAML text and the context as files."""

    config: Annotated[str, Field(max_length=2**20)] | None = None
    model_definition: Annotated[list[File], Field(max_length=MAX_CONTEXT_FILES)] | None = None
    activate: bool | None = None
    validate_only: bool | None = None
    parent_id: int | None = None
    project_id: int | None = None
    template: str | None = None
    unmanaged: bool | None = None


class LaunchWarning(StrEnum):
    """``v1LaunchWarning``."""

    UNSPECIFIED = "LAUNCH_WARNING_UNSPECIFIED"
    CURRENT_SLOTS_EXCEEDED = "LAUNCH_WARNING_CURRENT_SLOTS_EXCEEDED"


class CreateExperimentResponse(DetResource):
    experiment: Experiment
    config: dict[str, Any]
    warnings: list[LaunchWarning] = Field(default_factory=list)


class CheckpointStoragePatch(DetRequest):
    """``PatchExperimentPatchCheckpointStorage``: a new garbage-collection policy."""

    save_experiment_best: int | None = None
    save_trial_best: int | None = None
    save_trial_latest: int | None = None


class ResourcesPatch(DetRequest):
    """``PatchExperimentPatchResources``."""

    max_slots: int | None = None
    weight: float | None = None
    priority: int | None = None


class PatchExperiment(DetRequest):
    """``PATCH /api/v1/experiments/{experiment.id}`` (``v1PatchExperiment``): each field given
    is changed (``det experiment set ...``)."""

    id: int
    name: str | None = None
    description: str | None = None
    labels: list[str] | None = None
    notes: str | None = None
    resources: ResourcesPatch | None = None
    checkpoint_storage: CheckpointStoragePatch | None = None


class PatchExperimentResponse(DetResource):
    experiment: Experiment


class ContinueExperiment(DetRequest):
    """``POST /api/v1/experiments/continue`` (``det experiment continue``): train the
    experiment's trial further, with ``overrideConfig`` laid over its config."""

    id: int
    override_config: Annotated[str, Field(max_length=2**20)] | None = None


class ContinueExperimentResponse(DetResource):
    experiment: Experiment
    warnings: list[LaunchWarning] = Field(default_factory=list)


class ModelDef(DetResource):
    """``GET /api/v1/experiments/{experimentId}/model_def``: the context as a base64 tar.gz."""

    b64_tgz: str


class Empty(DetResource):
    """What Determined answers a state change with: an empty object."""


def det_experiment(exp: rest.Experiment, default_pool: str) -> Experiment:
    """assay's experiment as Determined's clients read one; one that names no pool shows
    ``default_pool``, where it runs."""
    searcher = exp.config.get("searcher") or {}
    best = exp.best_trial
    ran = None
    if exp.started_at is not None and exp.ended_at is not None:
        ran = int((exp.ended_at - exp.started_at) * 1000)
    return Experiment(
        id=exp.id,
        name=exp.name,
        description=exp.description,
        labels=list(exp.labels),
        start_time=timestamp(exp.created_at),
        end_time=None if exp.ended_at is None else timestamp(exp.ended_at),
        state=DetExperimentState.of(exp.state),
        archived=exp.archived,
        num_trials=sum(exp.trials.values()),
        username=exp.owner,
        resource_pool=exp.resource_pool or default_pool,
        searcher_type=str(searcher.get("name") or exp.searcher.name or ""),
        searcher_metric=exp.searcher.metric,
        best_trial_id=None if best is None else best.id,
        best_trial_searcher_metric=None if best is None else best.best_validation,
        job_id=exp.job_id,
        progress=exp.progress,
        config=exp.config,
        original_config=exp.original_config,
        duration=ran,
    )


def validated(checked: rest.ExperimentValidation) -> Experiment:
    """The empty experiment (id 0) Determined answers a ``validateOnly`` creation with, with
    what the check found (name, searcher, pool)."""
    return Experiment(
        id=0,
        name=checked.name,
        start_time=timestamp(0),
        state=DetExperimentState.UNSPECIFIED,
        archived=False,
        num_trials=0,
        username="",
        resource_pool=checked.resource_pool,
        searcher_type=checked.searcher,
        job_id="",
        config={},
        original_config="",
    )


class GcCandidate(Resource):
    """A checkpoint ``det experiment set gc-policy`` would delete, in the shape of Determined's
    ``GET /experiments/{id}/preview_gc`` (its Go field names; ``step.validation`` marks one
    with a validation, which the CLI lists)."""

    model_config = ConfigDict(serialize_by_alias=True)

    trial_id: int = Field(serialization_alias="TrialID")
    steps_completed: int = Field(serialization_alias="StepsCompleted")
    state: str = Field(serialization_alias="State")
    validation_metrics: dict[str, float] = Field(serialization_alias="ValidationMetrics")
    uuid: str = Field(serialization_alias="UUID")
    resources: dict[str, int] = Field(serialization_alias="Resources")
    report_time: str = Field(serialization_alias="ReportTime")
    step: dict[str, Any] | None = None


class GcPreview(Resource):
    checkpoints: list[GcCandidate]
    metric_name: str


def gc_preview(found: rest.GcResult, metric: str) -> GcPreview:
    """What a dry run of a garbage-collection policy found, as ``det`` previews it."""
    shown = []
    for c in found.checkpoints:
        values = {} if c.metric is None else {metric: c.metric}
        shown.append(
            GcCandidate(
                trial_id=c.trial_id,
                steps_completed=c.steps_completed,
                state=checkpoint_state(c.state).value.removeprefix("STATE_"),
                validation_metrics=values,
                uuid=c.uuid,
                resources=c.resources,
                report_time=timestamp(c.reported_at),
                step={"validation": {"metrics": values}} if values else None,
            )
        )
    return GcPreview(checkpoints=shown, metric_name=metric)


def config_overrides(text: str) -> list[str]:
    """A partial config (YAML text, as ``det experiment continue`` sends ``overrideConfig``) as
    assay's ``key.path=value`` overrides, one per leaf: maps merge into the config's, and any
    other value replaces what is there, as Determined merges them."""
    if not text.strip():
        return []
    try:
        partial = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InvalidRequest(f"overrideConfig is not YAML: {exc}".splitlines()[0]) from None
    if partial is None or partial == {}:
        return []  # det sends "{}" when no --config is given
    if not isinstance(partial, dict):
        raise InvalidRequest("overrideConfig must be a map of config keys to values")
    out: list[str] = []

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict) and value:
            for key, inner in value.items():
                walk(f"{prefix}{key}.", inner)
        else:
            out.append(f"{prefix.rstrip('.')}={json.dumps(value)}")

    walk("", partial)
    return out
