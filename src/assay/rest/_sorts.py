"""What lists are sorted by, and which way: the values of their ``sort`` and ``order``."""

from __future__ import annotations

from enum import StrEnum


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


class TrialSort(StrEnum):
    """What an experiment's trial list can be sorted by (ties broken by id, the same way)."""

    ID = "id"
    STATE = "state"
    STEPS = "steps"
    """Steps completed."""
    RESTARTS = "restarts"
    BEST = "best"
    """Best validation of the searcher metric, by the experiment's ``smaller_is_better``:
    ascending is best first. Trials with no validation yet come last either way."""


__all__ = ["ExperimentSort", "SortOrder", "TrialSort"]
