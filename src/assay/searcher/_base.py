"""The search-method protocol and the wrapper the master drives.

A :class:`SearchMethod` is a pure state machine: events in (a trial was created, a validation
finished, a trial exited), operations out. It never does IO and never reads the clock; all its
randomness comes from the ``random.Random`` it was built with. :class:`Searcher` wraps one method
with the bookkeeping every method needs (which trials exist, their pending lengths, which were
closed, idempotence) and normalises the metric so methods always minimise.
"""

from __future__ import annotations

import math
import random
import sys
import uuid
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from assay.protocol import ExitedReason
from assay.searcher._ops import (
    Close,
    Create,
    Operation,
    Shutdown,
    TrialRecord,
    ValidateAfter,
)


@runtime_checkable
class SearchMethod(Protocol):
    """A hyperparameter search algorithm.

    Contract (checked for every implementation by ``assay.searcher.testing``):

    * Pure: the operations returned depend only on the constructor's arguments, the events
      delivered so far and the method's own ``random.Random``. No IO, no clock.
    * ``metric`` arguments are always *smaller is better*; the wrapper flips the sign for
      ``smaller_is_better: false`` experiments.
    * Each :class:`Create` carries a request id never used before. The lengths of successive
      :class:`ValidateAfter` operations for one trial strictly increase.
    * A method eventually returns :class:`Shutdown` once every trial it created has closed or
      exited and it wants no more.
    * ``snapshot()`` returns JSON-serialisable data; a fresh method given ``restore(snapshot)``
      answers every later event exactly as the original would have.
    """

    def initial_operations(self) -> list[Operation]:
        """The operations to start the search with (usually the first ``Create``\\ s)."""
        ...

    def trial_created(self, request_id: str) -> list[Operation]:
        """The trial asked for by ``Create(request_id)`` now exists."""
        ...

    def validation_completed(self, request_id: str, metric: float, length: int) -> list[Operation]:
        """The trial reached ``length`` units and validated with ``metric`` (smaller is better)."""
        ...

    def trial_exited_early(self, request_id: str, reason: ExitedReason) -> list[Operation]:
        """The trial ended before the method closed it."""
        ...

    def trial_closed(self, request_id: str) -> list[Operation]:
        """The trial finished after the method closed it, or its code finished on its own."""
        ...

    def progress(self, partial: Mapping[str, float]) -> float:
        """How far the search is, from 0.0 to 1.0: the work done over the work planned.

        ``partial`` holds the open trials' share of the operation each trains towards now
        (code-driven: of its whole run), from 0.0 to 1.0, as far as the trials have reported
        it; a trial not in it has reported none. Work a trial reported this way counts as done,
        so progress moves while trials train, not only when they validate; it never makes
        progress smaller.
        """
        ...

    def snapshot(self) -> dict[str, Any]:
        """All of the method's state, JSON-serialisable."""
        ...

    def restore(self, state: dict[str, Any]) -> None:
        """Load what :meth:`snapshot` returned."""
        ...


@runtime_checkable
class Staged(Protocol):
    """A method whose trials advance in stages (rungs, rounds): it can say where a trial stands,
    which is what a trial it released to wait for a promotion shows."""

    def stage_of(self, request_id: str) -> str | None:
        """Where the trial stands, such as ``rung 2 of 4`` (the last stage it finished, counted
        from 1); None for a trial the method does not know."""
        ...


def stage_of(method: object, request_id: str) -> str | None:
    """``method.stage_of(request_id)`` for a :class:`Staged` method, else None."""
    return method.stage_of(request_id) if isinstance(method, Staged) else None


def new_request_id(rng: random.Random) -> str:
    """A request id drawn from the method's RNG, so a replayed search makes the same ids."""
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def new_trial_seed(rng: random.Random) -> int:
    return rng.randrange(0, 2**31 - 1)


def rng_state(rng: random.Random) -> list[Any]:
    version, internal, gauss = rng.getstate()
    return [version, list(internal), gauss]


def set_rng_state(rng: random.Random, state: list[Any]) -> None:
    version, internal, gauss = state
    rng.setstate((version, tuple(internal), gauss))


SearcherEvent = dict[str, Any]
"""One event a :class:`Searcher` handled, as JSON: ``{"kind": "initial"}``, ``{"kind":
"validation", "request_id", "metric" (normalized), "length"}``, ``{"kind": "exit", "request_id",
"reason"}`` or ``{"kind": "closed", "request_id"}``."""


WORST_METRIC = sys.float_info.max
"""The metric a method gives a trial that exited without one: worse than any real result, and
finite so snapshots stay strict JSON."""


def normalize_metric(metric: float, *, smaller_is_better: bool) -> float:
    """The metric as a method sees it: smaller is better and finite.

    NaN (a diverged run) counts as the worst result; infinities are clamped to the largest finite
    floats so that sorting and JSON both keep working.
    """
    if math.isnan(metric):
        return WORST_METRIC
    value = metric if smaller_is_better else -metric
    return max(-WORST_METRIC, min(WORST_METRIC, value))


class Searcher:
    """One experiment's search: a method plus the bookkeeping the master relies on.

    Every ``*`` event method returns the *new* operations the master must act on, after the
    wrapper has applied them to its own records (pending lengths, closed trials). Calls are
    idempotent where a retried report could repeat them: a validation for a length that is not
    pending, or a second exit of the same trial, changes nothing and returns ``[]``.

    ``code_driven`` searches accept validations at any increasing length, not only at pending
    operations: the trial's code trains as long as it likes and the method watches.
    """

    def __init__(
        self, method: SearchMethod, *, smaller_is_better: bool = True, code_driven: bool = False
    ) -> None:
        self.method = method
        self.smaller_is_better = smaller_is_better
        self.code_driven = code_driven
        self.trials: dict[str, TrialRecord] = {}
        self._open: dict[str, TrialRecord] = {}
        """The trials neither closed nor exited, oldest first: what :meth:`training` reads at
        every event, so its cost follows the trials open, not every trial of a long search."""
        self.started = False
        self.shutdown: Shutdown | None = None
        self.keeps_events = False
        """Whether events are kept for :meth:`take_events` (the master's event log turns it
        on; a simulation that never takes them leaves it off)."""
        self._journal: list[SearcherEvent] = []

    # -- events ---------------------------------------------------------------------------------

    def initial_operations(self) -> list[Operation]:
        if self.started:
            return []
        self.started = True
        self._log({"kind": "initial"})
        return self._apply(self.method.initial_operations())

    def validation_completed(self, request_id: str, metric: float, length: int) -> list[Operation]:
        normalized = normalize_metric(metric, smaller_is_better=self.smaller_is_better)
        return self._validated(request_id, normalized, length)

    def trial_exited_early(self, request_id: str, reason: ExitedReason) -> list[Operation]:
        record = self.trials.get(request_id)
        if record is None or record.exited:
            return []
        self._log({"kind": "exit", "request_id": request_id, "reason": reason.value})
        record.exited = True
        record.pending.clear()
        self._open.pop(request_id, None)
        return self._apply(self.method.trial_exited_early(request_id, reason))

    def trial_closed(self, request_id: str) -> list[Operation]:
        record = self.trials.get(request_id)
        if record is None or record.exited:
            return []
        self._log({"kind": "closed", "request_id": request_id})
        record.exited = True
        record.closed = True
        record.pending.clear()
        self._open.pop(request_id, None)
        return self._apply(self.method.trial_closed(request_id))

    def _validated(self, request_id: str, metric: float, length: int) -> list[Operation]:
        # ``metric`` is normalized already, so the journal holds finite numbers (strict JSON)
        # and a replay hands the method exactly what it was given.
        record = self.trials.get(request_id)
        if record is None or record.exited:
            return []
        if self.code_driven:
            if length <= record.completed_length and record.completed_length > 0:
                return []
        elif length not in record.pending:
            return []
        else:
            record.pending = [p for p in record.pending if p > length]
        self._log(
            {"kind": "validation", "request_id": request_id, "metric": metric, "length": length}
        )
        record.completed_length = max(record.completed_length, length)
        return self._apply(self.method.validation_completed(request_id, metric, length))

    # -- the event log ----------------------------------------------------------------------------

    def take_events(self) -> list[SearcherEvent]:
        """The events that changed the search since the last call (JSON-serialisable), oldest
        first. A snapshot followed by :meth:`replay` of every event taken after it rebuilds
        this searcher exactly; no-op events (a repeated report, a second exit) are left out."""
        events, self._journal = self._journal, []
        return events

    def _log(self, event: SearcherEvent) -> None:
        if self.keeps_events:
            self._journal.append(event)

    def replay(self, events: list[SearcherEvent]) -> None:
        """Deliver logged events again (after :meth:`restore` of the snapshot they follow); the
        operations they give were carried out when the events first happened."""
        for event in events:
            kind = event["kind"]
            if kind == "initial":
                self.initial_operations()
            elif kind == "validation":
                self._validated(event["request_id"], float(event["metric"]), int(event["length"]))
            elif kind == "exit":
                self.trial_exited_early(event["request_id"], ExitedReason(event["reason"]))
            elif kind == "closed":
                self.trial_closed(event["request_id"])
            else:
                raise ValueError(f"unknown searcher event {event!r}")
        self._journal = []

    # -- queries --------------------------------------------------------------------------------

    def pending_length(self, request_id: str) -> int | None:
        """The length the trial must train to next, or None when nothing is pending."""
        record = self.trials.get(request_id)
        if record is None or not record.pending:
            return None
        return record.pending[0]

    def active_count(self) -> int:
        """How many trials hold (or are owed) a slot: the number ``max_concurrent_trials`` caps.

        Searcher-driven, a trial is active while it has an operation pending; one that finished
        its operation and waits for a promotion is open but idle. Code-driven, every open trial
        is training.
        """
        return len(self.training())

    def stage_of(self, request_id: str) -> str | None:
        """Where an open trial stands in its method's stages (``rung 2 of 4``): what a trial
        waiting for a promotion shows; None when the method has no stages or the trial is
        closed."""
        if self.is_closed(request_id):
            return None
        return stage_of(self.method, request_id)

    def is_closed(self, request_id: str) -> bool:
        record = self.trials.get(request_id)
        return record is None or record.closed or record.exited

    def training(self) -> list[str]:
        """The trials training towards an operation (code-driven: every open trial): the ones
        whose reported share of it :meth:`progress` counts."""
        return [rid for rid, r in self._open.items() if self.code_driven or r.pending]

    def progress(self, partial: Mapping[str, float] | None = None) -> float:
        """How far the search is, from 0.0 to 1.0 (the one definition every view shows).

        ``partial``: what the trials of :meth:`training` reported of their current operation
        (see :meth:`SearchMethod.progress`); shares of other trials, and values outside
        ``[0, 1]``, are left out or clamped, so a stale or odd report cannot count.
        """
        if self.shutdown is not None:
            return 1.0
        shares: dict[str, float] = {}
        for request_id in self.training():
            share = (partial or {}).get(request_id, 0.0)
            if share > 0.0:  # NaN compares false: it counts as nothing reported
                shares[request_id] = min(share, 1.0)
        return max(0.0, min(1.0, self.method.progress(shares)))

    # -- persistence ----------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        # A trial that exited is ``[completed_length, closed]`` (nothing is pending once a trial
        # exits): a long search has thousands, and as full records they were most of the size.
        return {
            "method": self.method.snapshot(),
            "trials": {
                rid: [rec.completed_length, rec.closed] if rec.exited else rec.to_json()
                for rid, rec in self.trials.items()
            },
            "started": self.started,
            "shutdown": None
            if self.shutdown is None
            else {"failure": self.shutdown.failure, "message": self.shutdown.message},
        }

    def restore(self, state: dict[str, Any]) -> None:
        self.method.restore(state["method"])
        self.trials = {
            rid: TrialRecord(rid, [], int(rec[0]), bool(rec[1]), exited=True)
            if isinstance(rec, list)
            else TrialRecord.from_json(rec)
            for rid, rec in state["trials"].items()
        }
        self._open = {rid: r for rid, r in self.trials.items() if not (r.closed or r.exited)}
        self.started = bool(state["started"])
        raw = state.get("shutdown")
        self.shutdown = None if raw is None else Shutdown(**raw)
        self._journal = []

    # -- internals ------------------------------------------------------------------------------

    def _apply(self, ops: list[Operation]) -> list[Operation]:
        out: list[Operation] = []
        queue = list(ops)
        while queue:
            op = queue.pop(0)
            if isinstance(op, Create):
                if op.request_id in self.trials:
                    raise ValueError(f"search method reused request id {op.request_id}")
                self.trials[op.request_id] = self._open[op.request_id] = TrialRecord(op.request_id)
                out.append(op)
                queue[0:0] = self.method.trial_created(op.request_id)
            elif isinstance(op, ValidateAfter):
                record = self.trials[op.request_id]
                if record.closed or record.exited:
                    continue
                if op.length <= max([record.completed_length, *record.pending]):
                    continue
                record.pending.append(op.length)
                out.append(op)
            elif isinstance(op, Close):
                record = self.trials[op.request_id]
                if record.closed or record.exited:
                    continue
                record.closed = True
                record.pending.clear()
                self._open.pop(op.request_id, None)
                out.append(op)
            elif self.shutdown is None:
                self.shutdown = op
                out.append(op)
        return out
