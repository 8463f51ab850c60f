"""What trial processes send and are answered: reports, searcher operations, preemption."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, model_validator

from assay import protocol
from assay.protocol import ExitedReason
from assay.rest._common import DbInt, DbText, Lenient, Request, Resource

SIZE_MAX = 2**53 - 1
"""The largest byte count a checkpoint's files may add up to (8 PiB): the largest integer a JSON
number read as a double (the web UI's, JSON Schema's) holds exactly, so the document's bound is
the one the master checks."""


class SearcherOperation(Resource):
    """The next length to train to, or ``done`` once the searcher needs no more from the trial
    (``released``: nothing was pending for a while; it may be queued again later)."""

    length: int | None = Field(description="Train to this many units (absolute).")
    done: bool
    released: bool = False


class CompletedOperation(Request):
    length: DbInt = Field(description="The length trained to.")
    metric: float = Field(description="The searcher metric at that length (finite).")


class MetricReport(Request):
    group: DbText = Field(min_length=1, max_length=64, description="training, validation, ...")
    steps_completed: DbInt
    metrics: dict[str, Any]
    time: float | None = Field(default=None, description="Seconds since the epoch.")
    final: bool = Field(
        default=False,
        description="A validation that is the trial's final result (NNI's "
        "report_final_result); an NNI experiment ranks its trials by these.",
    )

    def to_protocol(self) -> protocol.MetricReport:
        """The report as the master stores it (validated here, so never parsed again)."""
        return protocol.MetricReport(
            self.group, self.steps_completed, self.metrics, self.time or 0.0, self.final
        )


class MetricsBatch(Request):
    reports: list[MetricReport]


class ProgressReport(Request):
    progress: float = Field(ge=0.0, le=1.0)


class EarlyExitReport(Request):
    reason: Annotated[ExitedReason, Lenient] = Field(
        description="Why the trial's code stops on its own."
    )


class CheckpointReport(Request):
    uuid: str = Field(
        pattern=protocol.CHECKPOINT_UUID_PATTERN,
        description="Its id and its directory in storage: a UUID in lower case, as the "
        "harness makes them.",
    )
    steps_completed: DbInt
    metadata: dict[str, Any] | None = Field(default=None, description="Anything JSON.")
    resources: dict[str, Annotated[int, Field(ge=0, le=SIZE_MAX)]] | None = Field(
        default=None, description="File sizes in bytes by path inside the checkpoint."
    )

    @model_validator(mode="after")
    def _total_size_fits(self) -> CheckpointReport:
        total = sum((self.resources or {}).values())
        if total > SIZE_MAX:
            raise ValueError(f"resources: the sizes add up to {total}, over {SIZE_MAX} bytes")
        return self

    def to_protocol(self) -> protocol.CheckpointReport:
        """The report as the master registers it (validated here, so never parsed again)."""
        return protocol.CheckpointReport(
            self.uuid, self.steps_completed, self.metadata or {}, self.resources or {}
        )


class PreemptionSignal(Resource):
    preempt: bool = Field(description="True once the allocation should checkpoint and exit.")


class BestValidation(Resource):
    best_validation: float | None = Field(description="Best searcher metric of any trial.")
