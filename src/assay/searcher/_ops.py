"""What a searcher says to the master: operations."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeAlias


@dataclass(frozen=True)
class Create:
    """Create a trial with these hyperparameters.

    ``checkpoint`` names a checkpoint the trial starts from instead of from scratch (PBT's
    exploit, ``source_checkpoint_uuid``); ``seed`` is the trial's seed, drawn from the
    experiment seed so runs are reproducible.
    """

    request_id: str
    hparams: dict[str, Any]
    seed: int
    checkpoint: str | None = None


@dataclass(frozen=True)
class ValidateAfter:
    """Train the trial to ``length`` units (absolute, never an increment), then validate and
    report the searcher metric."""

    request_id: str
    length: int


@dataclass(frozen=True)
class Close:
    """The searcher needs nothing more from this trial. A trial still running is asked to stop
    (early stopping): it sees ``should_preempt()``, exits cleanly and ends COMPLETED."""

    request_id: str


@dataclass(frozen=True)
class Shutdown:
    """The search is over. ``failure`` ends the experiment in ERROR (the searcher cannot go
    on); otherwise it completes once its trials have closed."""

    failure: bool = False
    message: str = ""


Operation: TypeAlias = Create | ValidateAfter | Close | Shutdown


class ExitedReason(StrEnum):
    """Why a trial ended before the searcher closed it."""

    ERRORED = "errored"
    """It failed more often than ``max_restarts`` allows."""
    USER_CANCELED = "user_canceled"
    """The user killed it, or its code exited before finishing its operations."""
    INVALID_HP = "invalid_hp"
    """Its code declared the hyperparameters invalid; the searcher replaces it."""


def op_to_json(op: Operation) -> dict[str, Any]:
    """The JSON form of an operation (for logs, previews and the searcher's event log)."""
    kind = type(op).__name__
    return {"type": kind, **{k: v for k, v in op.__dict__.items()}}


@dataclass
class TrialRecord:
    """What the searcher wrapper remembers of one trial (part of its snapshot)."""

    request_id: str
    pending: list[int] = field(default_factory=list)
    completed_length: int = 0
    closed: bool = False
    exited: bool = False
    best_metric: float | None = None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> TrialRecord:
        return cls(**raw)
