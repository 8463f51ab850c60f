"""Metric reports relayed through the agent, and preemption told through it: the trial's
reporter hands its batches to its agent over a local socket, and the agent carries every trial's
batches to the master together, in one message over its WebSocket, instead of one HTTP request
per report. The other way, the master tells the agent when an allocation is asked to stop
(:class:`Preempt`), and the trial's watcher hears it from the agent instead of holding a long
poll open on the master.

On a large cluster the reports are most of what the master is asked: 8,000 trials reporting
every ten seconds are 800 requests a second, each paying for HTTP, routing and a token check.
Relayed, they ride the agent's connection, a few messages a second per agent.

The local socket speaks JSON lines. A request: ``{"id": n, "token": ..., "trial_id": ...,
"reports": [...]}`` (the reports as ``POST /trials/{id}/metrics`` takes them), or ``{"id": n,
"token": ..., "trial_id": ..., "checkpoint": {...}}`` (as ``POST /checkpoints`` takes it); its
answer:
``{"id": n, "status": 204}``, or ``{"id": n, "status": s, "error": {...}}`` with the error the
master would have answered over HTTP. ``status`` 0 means "send it yourself": this agent cannot
relay now (its master does not take relayed reports).

A preemption watch: ``{"id": n, "preemption": allocation_id, "wait": seconds}``; its answer,
once the master has asked the allocation to stop or after ``wait``: ``{"id": n, "status": 200,
"preempt": true|false}`` (``status`` 0: ask the master yourself).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from assay.errors import InvalidRequest
from assay.protocol._fields import Fields

RELAY_ENV = "ASSAY_AGENT_RELAY"
"""The agent's relay socket, for a trial's reporter: an abstract Unix socket's name after
``@``. Unset (a trial in a container, on a Slurm or Kubernetes node): reports go over HTTP."""

SEND_IT_YOURSELF = 0
"""The status of an answer that relays nothing: the reporter sends the batch over HTTP."""


@dataclass(frozen=True)
class RelayedBatch:
    """One trial's batch of metric reports, or one checkpoint it registers, with its
    allocation's token (checked by the master as it checks the HTTP request's)."""

    token: str
    trial_id: int
    reports: list[Any]
    """As ``POST /trials/{id}/metrics`` takes them; the master checks them as it checks
    that request's."""
    checkpoint: dict[str, Any] | None = None
    """Instead of reports: a checkpoint, as ``POST /checkpoints`` takes it."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"token": self.token, "trial_id": self.trial_id}
        if self.checkpoint is not None:
            out["checkpoint"] = self.checkpoint
        else:
            out["reports"] = self.reports
        return out

    @classmethod
    def from_dict(cls, raw: object, where: str) -> RelayedBatch:
        f = Fields(raw, where)
        checkpoint = f.raw.get("checkpoint")
        if checkpoint is not None:
            if not isinstance(checkpoint, dict):
                raise InvalidRequest(
                    f"{f.path('checkpoint')}: must be an object (a checkpoint as POST "
                    f"/checkpoints takes it), got {type(checkpoint).__name__}"
                )
            if "reports" in f.raw:
                raise InvalidRequest(f"{where}: carries reports or a checkpoint, not both")
        return cls(
            token=f.text("token"),
            trial_id=f.integer("trial_id"),
            reports=[] if checkpoint is not None else f.items("reports"),
            checkpoint=checkpoint,
        )


@dataclass(frozen=True)
class RelayedReports:
    """Agent to master: its trials' batches, answered by :class:`ReportsAck` of the same
    ``seq``. A batch sent again (a lost answer, a master restart) is stored once."""

    type: ClassVar[str] = "reports"
    seq: int
    batches: list[RelayedBatch]

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "seq": self.seq, "batches": [b.to_dict() for b in self.batches]}

    @classmethod
    def from_dict(cls, raw: object, where: str = "reports") -> RelayedReports:
        f = Fields(raw, where)
        return cls(
            seq=f.integer("seq"),
            batches=[
                RelayedBatch.from_dict(b, f"{f.path('batches')}[{i}]")
                for i, b in enumerate(f.items("batches"))
            ],
        )


@dataclass(frozen=True)
class Preempt:
    """Master to agent: the allocation is asked to checkpoint and exit (a pause, a preemption,
    an early stop). Sent when it is asked, and again after each reconnect while it holds; the
    agent answers its trial's preemption watch with it.

    On a large cluster every trial watches: 8,000 long polls held open on the master, each
    asked again every minute. Told this way, they cost it one message per stop."""

    type: ClassVar[str] = "preempt"
    allocation_id: str

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "allocation_id": self.allocation_id}

    @classmethod
    def from_dict(cls, raw: object, where: str = "preempt") -> Preempt:
        return cls(allocation_id=Fields(raw, where).text("allocation_id"))


@dataclass(frozen=True)
class PreemptionWatch:
    """A trial's question to its agent's relay: has ``allocation_id`` been asked to stop?
    Answered at once when it has, else when it is or after ``wait`` seconds."""

    allocation_id: str
    wait: float

    @classmethod
    def from_dict(cls, raw: object, where: str) -> PreemptionWatch:
        f = Fields(raw, where)
        wait = f.number("wait", 0.0)
        if wait < 0:
            raise InvalidRequest(f"{f.path('wait')}: must be 0 or more seconds, got {wait}")
        return cls(allocation_id=f.text("preemption"), wait=wait)


@dataclass(frozen=True)
class RelayOutcome:
    """What became of one batch: ``status`` 204, or the HTTP status and the error (what
    ``{"error": {...}}`` holds) the master would have answered."""

    status: int
    error: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status}
        if self.error:
            out["error"] = self.error
        return out

    @classmethod
    def from_dict(cls, raw: object, where: str) -> RelayOutcome:
        f = Fields(raw, where)
        error = f.mapping("error", {})
        return cls(status=f.integer("status"), error=dict(error))


@dataclass(frozen=True)
class ReportsAck:
    """Master to agent: the outcome of each batch of :class:`RelayedReports` ``seq``, in
    order."""

    type: ClassVar[str] = "reports_ack"
    seq: int
    outcomes: list[RelayOutcome]

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "seq": self.seq,
            "outcomes": [o.to_dict() for o in self.outcomes],
        }

    @classmethod
    def from_dict(cls, raw: object, where: str = "reports_ack") -> ReportsAck:
        f = Fields(raw, where)
        return cls(
            seq=f.integer("seq"),
            outcomes=[
                RelayOutcome.from_dict(o, f"{f.path('outcomes')}[{i}]")
                for i, o in enumerate(f.items("outcomes"))
            ],
        )
