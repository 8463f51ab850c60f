"""What a searcher says to the master: operations."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, TypeAlias


@dataclass(frozen=True)
class Create:
    """Create a trial with these hyperparameters.

    ``checkpoint`` names a checkpoint the trial starts from instead of from scratch: either a
    checkpoint uuid (``source_checkpoint_uuid``), or ``"trial:<request id>"`` (see
    :func:`parent_checkpoint`), which PBT's exploit uses because a search method never sees
    checkpoint uuids. The trial resumes from that checkpoint, progress included, so its
    operations' absolute lengths continue from its parent's. ``seed`` is the trial's seed,
    drawn from the experiment seed so runs are reproducible.
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


EVERY_TRIAL_FAILED = "every trial failed"
"""The message of the :class:`Shutdown` a search ends with when each of its trials failed; the
master adds which trial failed last and how to read its log."""

Operation: TypeAlias = Create | ValidateAfter | Close | Shutdown

PARENT_CHECKPOINT_PREFIX = "trial:"


def parent_checkpoint(request_id: str) -> str:
    """The ``Create.checkpoint`` value meaning "the latest checkpoint of trial ``request_id``".

    The master resolves it when it creates the trial, to the newest checkpoint that trial has
    reported (a trial checkpoints at the end of every operation, so this is the state it
    validated with). A trial that has none cannot be copied: the master creates the new trial
    from scratch and logs why.
    """
    return f"{PARENT_CHECKPOINT_PREFIX}{request_id}"


def checkpoint_parent(checkpoint: str | None) -> str | None:
    """The request id named by a :func:`parent_checkpoint` value, or None for anything else."""
    if checkpoint is None or not checkpoint.startswith(PARENT_CHECKPOINT_PREFIX):
        return None
    return checkpoint[len(PARENT_CHECKPOINT_PREFIX) :]


def op_to_json(op: Operation) -> dict[str, Any]:
    """The JSON form of an operation (for logs, previews and the searcher's event log)."""
    kind = type(op).__name__
    return {"type": kind, **{k: v for k, v in op.__dict__.items()}}


def op_from_json(raw: dict[str, Any]) -> Operation:
    """Inverse of :func:`op_to_json`; raises ``ValueError`` naming what is wrong."""
    if not isinstance(raw, dict):
        raise ValueError(f"an operation must be a JSON object, got {raw!r}")
    kind = raw.get("type")
    fields = {k: v for k, v in raw.items() if k != "type"}
    try:
        if kind == "Create":
            op: Operation = Create(
                str(fields["request_id"]),
                dict(fields["hparams"]),
                int(fields["seed"]),
                None if fields.get("checkpoint") is None else str(fields["checkpoint"]),
            )
        elif kind == "ValidateAfter":
            op = ValidateAfter(str(fields["request_id"]), int(fields["length"]))
        elif kind == "Close":
            op = Close(str(fields["request_id"]))
        elif kind == "Shutdown":
            op = Shutdown(bool(fields.get("failure", False)), str(fields.get("message", "")))
        else:
            raise ValueError(
                f"unknown operation type {kind!r}; expected Create, ValidateAfter, Close or "
                "Shutdown"
            )
    except (KeyError, TypeError) as exc:
        raise ValueError(f"malformed {kind} operation {raw!r}: missing or bad {exc}") from exc
    return op


@dataclass(slots=True)
class TrialRecord:
    """What the searcher wrapper remembers of one trial (part of its snapshot). Slotted: a long
    search keeps one per trial it ever ran."""

    request_id: str
    pending: list[int] = field(default_factory=list)
    completed_length: int = 0
    closed: bool = False
    exited: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "pending": list(self.pending),
            "completed_length": self.completed_length,
            "closed": self.closed,
            "exited": self.exited,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> TrialRecord:
        # Snapshots written before a field was dropped still restore.
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in raw.items() if k in known})
