"""Experiments: what the list shows, what one experiment's page shows, and changing one."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import Field

from assay.protocol import ExperimentState, TrialState
from assay.rest._common import (
    NO_NUL,
    DbInt,
    Pagination,
    Priority,
    Request,
    Resource,
    Waiting,
    Weight,
    left_out,
)


class SortOrder(StrEnum):
    """Which way a list is sorted."""

    ASC = "asc"
    DESC = "desc"


class ExperimentSort(StrEnum):
    """What the experiment list can be sorted by (ties broken by id, the same way)."""

    ID = "id"
    NAME = "name"
    STATE = "state"
    START = "start"
    """When it was created."""
    END = "end"
    """When it ended; ones that have not ended come last either way."""
    BEST = "best"
    """Its best trial's searcher metric, normalised by the experiment's ``smaller_is_better``:
    ascending is best first. Ones with no validation yet come last either way."""
    USER = "user"
    """Its owner's name."""
    PROGRESS = "progress"
    """The fraction of its searcher's planned work done."""
    TRIALS = "trials"
    """How many trials it has."""
    DURATION = "duration"
    """From its first trial's start to its end (or now); ones that never ran come last
    either way."""


class ConfigSource(StrEnum):
    """How an experiment's config was written (and read)."""

    ASSAY = "assay"
    """assay's own format, Determined's."""
    NNI_V2 = "nni-v2"
    NNI_V1 = "nni-v1"

    @property
    def nni(self) -> bool:
        """An NNI experiment: its trials are ranked by their final results and shown with
        NNI's statuses, as NNI does."""
        return self in (ConfigSource.NNI_V2, ConfigSource.NNI_V1)


class SearcherSummary(Resource):
    name: str | None
    metric: str | None = Field(description="The searcher metric trials are ranked by.")
    smaller_is_better: bool


class BestTrial(Resource):
    """The trial with the best searcher metric so far (an NNI experiment's: the best final
    result)."""

    id: int
    best_validation: float | None
    latest_checkpoint: str | None = Field(description="uuid of its latest checkpoint.")
    hparams: dict[str, Any]


class ExperimentSummary(Resource):
    """An experiment as lists show it (without its config)."""

    id: int
    name: str
    description: str
    state: ExperimentState
    archived: bool
    progress: float = Field(description="Fraction of the searcher's planned work done, 0 to 1.")
    owner: str
    job_id: str
    message: str = Field(description="Why it ended in ERROR, or another note; may be empty.")
    created_at: float = Field(description="Seconds since the epoch.")
    started_at: float | None = Field(
        description="When its first trial started running; null while none has."
    )
    ended_at: float | None
    seed: int
    searcher: SearcherSummary
    resource_pool: str
    trials: dict[TrialState, int] = Field(description="How many of its trials are in each state.")
    best_trial: BestTrial | None = Field(
        description="Its best trial: by best validation, or for an NNI experiment (`source` "
        "nni-v2 or nni-v1) by final result, as NNI ranks trials."
    )
    source: ConfigSource = Field(
        default=ConfigSource.ASSAY, description="How its config was written."
    )
    labels: list[str] = Field(default=[], description="Its labels (the config's `labels`).")


class Experiment(ExperimentSummary):
    """One experiment with the config it runs with (defaults filled in) and as written."""

    config: dict[str, Any]
    original_config: str
    waiting: Waiting = None


class ExperimentList(Resource):
    experiments: list[ExperimentSummary] = Field(
        description="In the order asked for (``sort``, ``order``); newest first by default."
    )
    pagination: Pagination


class ExperimentStateAnswer(Resource):
    """The experiment's state when the wait ended (terminal, or the timeout passed)."""

    id: int
    state: ExperimentState


# The config's own limits (assay.config's MAX_NAME, MAX_DESCRIPTION, MAX_LABELS): a name set
# later fits where a submitted one does.
_Name = Annotated[str, Field(min_length=1, max_length=256, pattern=NO_NUL)]


class ExperimentResources(Request):
    """A change of an experiment: its share of the cluster, its name, description or labels.
    Every field given is applied, or none when one is refused."""

    # Left out, priority and weight stay as they are; null is no priority or weight (refused).
    priority: Priority = left_out("1 (first) to 99; priority pools.")
    weight: Weight = left_out("Above 0; fair-share pools.")
    max_slots: DbInt | None = Field(
        default=None, description="At most this many slots at once; null: no limit."
    )
    name: _Name | None = Field(default=None, description="A new name (not empty).")
    description: Annotated[str, Field(max_length=8192, pattern=NO_NUL)] | None = Field(
        default=None, description="A new description (may be empty)."
    )
    labels: Annotated[list[_Name], Field(max_length=100)] | None = Field(
        default=None, description="The experiment's labels, replacing the ones it has."
    )


class ExperimentValidation(Resource):
    """A config that would be accepted as submitted: what it was read as, and what the
    experiment would be. (A config that would not is answered 400, as a submission is, with
    each problem's path in ``details``.)"""

    source: ConfigSource = Field(description="How the config was read.")
    name: str = Field(description="The experiment's name (the config's, or the default).")
    searcher: str = Field(description="The searcher it would run.")
    resource_pool: str
    notes: list[str] = Field(description="Lines its log would start with.")
    context_files: int | None = Field(
        description="Files in the context archive sent, checked as a submission's; null when "
        "none was sent."
    )


class ExperimentNote(Resource):
    """A line of the experiment's own log: what the master decided about it (a tuner mapped
    onto a searcher, keys ignored, a time limit reached)."""

    id: int = Field(description="Increasing; ask for notes after the last one seen.")
    time: float = Field(description="Seconds since the epoch.")
    text: str


class ExperimentNoteList(Resource):
    notes: list[ExperimentNote] = Field(description="Oldest first.")


_Override = Annotated[str, Field(max_length=65536, pattern=NO_NUL)]


class ExperimentFork(Request):
    """A new experiment from another's config and context, with overrides applied."""

    overrides: Annotated[list[_Override], Field(max_length=1000)] = Field(
        default=[], description="`key.path=value`, as `create --config` takes them."
    )
    activate: bool = Field(default=True, description="False creates it PAUSED.")


class ExperimentContinue(ExperimentFork):
    """A new experiment whose one trial trains a trial of an ended experiment further, from its
    latest checkpoint, with the same hyperparameters (give a larger ``searcher.max_length`` in
    ``overrides``)."""

    trial_id: DbInt | None = Field(
        default=None, description="The trial to continue; needed when the experiment has several."
    )


class ExperimentDeleted(Resource):
    """What deleting an experiment removed."""

    id: int
    name: str
    trials: int = Field(description="How many trials were deleted with it.")
    checkpoints: int = Field(description="How many checkpoints were deleted from storage.")
