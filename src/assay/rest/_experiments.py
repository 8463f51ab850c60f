"""Experiments as the master answers them: what the list shows, what one experiment's page
shows, its own log, and what a validation or a deletion did. Answers read without pydantic
(``rest._plain``); the requests that change an experiment are in ``_experiment_requests``."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from assay.protocol import ExperimentState, TrialState
from assay.rest._plain import WHY_WAITING, Answer, Pagination, described


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


class SearcherSummary(Answer):
    name: str | None
    metric: str | None = described("The searcher metric trials are ranked by.")
    smaller_is_better: bool


class BestTrial(Answer):
    """The trial with the best searcher metric so far (an NNI experiment's: the best final
    result)."""

    id: int
    best_validation: float | None
    latest_checkpoint: str | None = described("uuid of its latest checkpoint.")
    hparams: dict[str, Any]


class ExperimentSummary(Answer):
    """An experiment as lists show it (without its config)."""

    id: int
    name: str
    description: str
    state: ExperimentState
    archived: bool
    progress: float = described("Fraction of the searcher's planned work done, 0 to 1.")
    owner: str
    job_id: str
    message: str = described("Why it ended in ERROR, or another note; may be empty.")
    created_at: float = described("Seconds since the epoch.")
    started_at: float | None = described(
        "When its first trial started running; null while none has."
    )
    ended_at: float | None
    seed: int
    searcher: SearcherSummary
    resource_pool: str
    trials: dict[TrialState, int] = described("How many of its trials are in each state.")
    best_trial: BestTrial | None = described(
        "Its best trial: by best validation, or for an NNI experiment (`source` nni-v2 or "
        "nni-v1) by final result, as NNI ranks trials."
    )
    source: ConfigSource = described("How its config was written.", default=ConfigSource.ASSAY)
    labels: list[str] = described("Its labels (the config's `labels`).", default_factory=list)


class Experiment(ExperimentSummary):
    """One experiment with the config it runs with (defaults filled in) and as written."""

    config: dict[str, Any]
    original_config: str
    waiting: str | None = described(WHY_WAITING, default=None)


class ExperimentList(Answer):
    experiments: list[ExperimentSummary] = described(
        "In the order asked for (``sort``, ``order``); newest first by default."
    )
    pagination: Pagination


class ExperimentStateAnswer(Answer):
    """The experiment's state when the wait ended (terminal, or the timeout passed)."""

    id: int
    state: ExperimentState


class ExperimentValidation(Answer):
    """A config that would be accepted as submitted: what it was read as, and what the
    experiment would be. (A config that would not is answered 400, as a submission is, with
    each problem's path in ``details``.)"""

    source: ConfigSource = described("How the config was read.")
    name: str = described("The experiment's name (the config's, or the default).")
    searcher: str = described("The searcher it would run.")
    resource_pool: str
    notes: list[str] = described("Lines its log would start with.")
    context_files: int | None = described(
        "Files in the context archive sent, checked as a submission's; null when none was sent."
    )


class ExperimentNote(Answer):
    """A line of the experiment's own log: what the master decided about it (a tuner mapped
    onto a searcher, keys ignored, a time limit reached)."""

    id: int = described("Increasing; ask for notes after the last one seen.")
    time: float = described("Seconds since the epoch.")
    text: str


class ExperimentNoteList(Answer):
    notes: list[ExperimentNote] = described("Oldest first.")


class ExperimentDeleted(Answer):
    """What deleting an experiment removed."""

    id: int
    name: str
    trials: int = described("How many trials were deleted with it.")
    checkpoints: int = described("How many checkpoints were deleted from storage.")
