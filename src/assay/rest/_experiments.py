"""Experiments: what the list shows, what one experiment's page shows, and changing one."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from assay.protocol import ExperimentState, TrialState
from assay.rest._common import DbInt, Pagination, Request, Resource


class SearcherSummary(Resource):
    name: str | None
    metric: str | None = Field(description="The searcher metric trials are ranked by.")
    smaller_is_better: bool


class BestTrial(Resource):
    """The trial with the best searcher metric so far."""

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
    ended_at: float | None
    seed: int
    searcher: SearcherSummary
    resource_pool: str
    trials: dict[TrialState, int] = Field(description="How many of its trials are in each state.")
    best_trial: BestTrial | None


class Experiment(ExperimentSummary):
    """One experiment with the config it runs with (defaults filled in) and as written."""

    config: dict[str, Any]
    original_config: str


class ExperimentList(Resource):
    experiments: list[ExperimentSummary] = Field(description="Newest first.")
    pagination: Pagination


class ExperimentStateAnswer(Resource):
    """The experiment's state when the wait ended (terminal, or the timeout passed)."""

    id: int
    state: ExperimentState


class ExperimentResources(Request):
    """A change of an experiment's share of the cluster: every field given is applied."""

    priority: int | None = Field(default=None, description="1 (first) to 99; priority pools.")
    weight: float | None = Field(default=None, description="Above 0; fair-share pools.")
    max_slots: DbInt | None = Field(default=None, description="At most this many slots at once.")


class ExperimentNote(Resource):
    """A line of the experiment's own log: what the master decided about it (a tuner mapped
    onto a searcher, keys ignored, a time limit reached)."""

    id: int = Field(description="Increasing; ask for notes after the last one seen.")
    time: float = Field(description="Seconds since the epoch.")
    text: str


class ExperimentNoteList(Resource):
    notes: list[ExperimentNote] = Field(description="Oldest first.")
