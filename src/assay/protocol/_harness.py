"""What a trial process and the master say to each other over REST (the harness's side).

Metric and checkpoint reports carry their own idempotency keys (trial, run, group,
steps_completed; a checkpoint's uuid), so a retried request stores nothing twice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from assay.errors import InvalidRequest
from assay.protocol._fields import MISSING, Fields, kind

CHECKPOINT_UUID_PATTERN = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
"""A checkpoint's id: a UUID in its canonical lower-case form, as the harness makes them
(``uuid.uuid4()``). The id names the checkpoint's directory in storage, which the master reads
and deletes with its own rights, so no other name is ever registered."""

_CHECKPOINT_UUID = re.compile(CHECKPOINT_UUID_PATTERN)


def check_checkpoint_uuid(uuid: object, where: str = "uuid") -> str:
    """``uuid`` if it is a checkpoint id (:data:`CHECKPOINT_UUID_PATTERN`); else
    :class:`~assay.errors.InvalidRequest` naming ``where``."""
    if isinstance(uuid, str) and _CHECKPOINT_UUID.fullmatch(uuid):
        return uuid
    shown = repr(uuid) if len(repr(uuid)) <= 80 else f"{repr(uuid)[:77]}..."
    raise InvalidRequest(
        f"{where}: {shown} is not a checkpoint id; checkpoint ids are UUIDs in lower case, "
        "such as 0b5e5b6c-9d5b-4f5e-8a77-2b1f0b0f7a10, made by the harness"
    )


VALIDATION = "validation"
"""The metric group whose reports the searcher sees."""
TRAINING = "training"


@dataclass(frozen=True)
class MetricReport:
    """Metrics of one group at one step of the trial's current run."""

    group: str
    steps_completed: int
    metrics: dict[str, Any]
    time: float = 0.0
    """When it was measured (seconds since the epoch); 0 means when the master stores it."""
    final: bool = False
    """A validation that is the trial's final result (NNI's ``report_final_result``): an NNI
    experiment ranks its trials by these alone, as NNI does."""

    def to_dict(self) -> dict[str, Any]:
        out = {
            "group": self.group,
            "steps_completed": self.steps_completed,
            "metrics": self.metrics,
            "time": self.time,
        }
        if self.final:
            out["final"] = True
        return out

    @classmethod
    def from_dict(cls, raw: object, where: str) -> MetricReport:
        f = Fields(raw, where)
        group = f.text("group", "")
        if not group:
            raise InvalidRequest(f"{f.path('group')}: must be a non-empty string")
        return cls(
            group=group,
            steps_completed=f.integer("steps_completed", minimum=0),
            metrics=f.mapping("metrics"),
            time=f.number("time", 0.0),
            final=f.flag("final", False),
        )


def metric_reports(raw: object) -> list[MetricReport]:
    """The reports of a ``POST /trials/{id}/metrics`` body's ``reports`` list."""
    if not isinstance(raw, list):
        raise InvalidRequest(
            f"reports: must be a list of {{group, steps_completed, metrics}}, got {kind(raw)}"
        )
    return [MetricReport.from_dict(item, f"reports[{i}]") for i, item in enumerate(raw)]


@dataclass(frozen=True)
class CheckpointReport:
    """A checkpoint the trial committed to storage (``POST /checkpoints``)."""

    uuid: str
    steps_completed: int
    metadata: dict[str, Any] = field(default_factory=dict)
    resources: dict[str, Any] = field(default_factory=dict)
    """File names (relative, ``/``-separated; directories end in ``/``) to sizes in bytes."""

    @property
    def size(self) -> int:
        return sum(self.resources.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "uuid": self.uuid,
            "steps_completed": self.steps_completed,
            "metadata": self.metadata,
            "resources": self.resources,
        }

    @classmethod
    def from_dict(cls, raw: object, where: str = "") -> CheckpointReport:
        f = Fields(raw, where)
        uuid = f.text("uuid", "")
        if not uuid:
            raise InvalidRequest(f"{f.path('uuid')}: required")
        sizes = Fields(f.mapping("resources", {}), f.path("resources"))
        return cls(
            uuid=uuid,
            steps_completed=f.integer("steps_completed", minimum=0),
            metadata=f.mapping("metadata", {}),
            resources={name: sizes.integer(name, minimum=0) for name in sizes.raw},
        )


@dataclass(frozen=True)
class OperationAnswer:
    """The answer to ``GET /trials/{id}/searcher/operation``: train to ``length``, or stop."""

    length: int | None
    done: bool
    released: bool = False
    """The trial waited too long for a new length: it should exit and free its slots; it is
    queued again if the searcher later asks for more."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"length": self.length, "done": self.done}
        if self.released:
            out["released"] = True
        return out

    @classmethod
    def from_dict(cls, raw: object, where: str = "operation") -> OperationAnswer:
        f = Fields(raw, where)
        done = f.flag("done", False)
        return cls(
            length=f.integer("length", None if done else MISSING),
            done=done,
            released=f.flag("released", False),
        )


@dataclass(frozen=True)
class CompletedOperation:
    """``POST /trials/{id}/searcher/completed_operation``: trained to ``length``, scoring
    ``metric`` (the searcher metric)."""

    length: int
    metric: float

    def to_dict(self) -> dict[str, Any]:
        return {"length": self.length, "metric": self.metric}


@dataclass(frozen=True)
class ProgressReport:
    """``POST /trials/{id}/progress``: the fraction of the trial done, 0 to 1."""

    progress: float

    def to_dict(self) -> dict[str, Any]:
        return {"progress": self.progress}


@dataclass(frozen=True)
class EarlyExitReport:
    """``POST /trials/{id}/early_exit``: why the trial stops before its searcher is done."""

    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"reason": self.reason}


@dataclass(frozen=True)
class PreemptionAnswer:
    """The answer to ``GET /allocations/{id}/signals/preemption``."""

    preempt: bool

    def to_dict(self) -> dict[str, Any]:
        return {"preempt": self.preempt}

    @classmethod
    def from_dict(cls, raw: object, where: str = "preemption") -> PreemptionAnswer:
        return cls(preempt=bool(Fields(raw, where).flag("preempt", False)))
