"""A conformance kit for search methods: drive one to the end against a simulated master and
check the :class:`~assay.searcher.SearchMethod` contract.

Every method in assay runs it (``tests/unit/searcher/``); a custom searcher's author can too::

    from assay.searcher.testing import check_method
    check_method(lambda: Searcher(MyMethod(...)), seed=1, max_trials=10, max_concurrent=2)

The simulated master picks what happens next with a seeded RNG: a running trial finishes its
operation (its metric is a noisy function of its own quality and length), errors, is cancelled
or declares its hyperparameters invalid; a closed trial ends; code-driven trials report at
growing lengths and eventually finish on their own. Checks:

* request ids are never reused; operations name only created trials;
* the lengths of one trial's ``ValidateAfter`` operations strictly increase, and no trial is
  given work after it was closed or ended;
* at most ``max_concurrent`` trials are active at once (see ``Searcher.active_count``);
* trials that count (created, less those that exited with invalid hyperparameters) never
  exceed ``max_trials``;
* the method eventually shuts down and every trial it created is closed or ended;
* a snapshot taken at any point, restored into a fresh searcher, answers every later event
  exactly as the original did;
* (:func:`check_replay`) a snapshot plus the searcher's logged events after it, replayed into
  a fresh searcher, give the live searcher's state, and it answers the rest exactly as the live
  one did: what the master's event log relies on.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from assay.protocol import ExitedReason
from assay.searcher._base import Searcher, SearchMethod
from assay.searcher._ops import (
    Close,
    Create,
    Operation,
    Shutdown,
    ValidateAfter,
    op_to_json,
)

Event = tuple[Any, ...]


class ContractViolation(AssertionError):
    """A search method broke the contract; the message says which rule and where."""


@dataclass
class Trace:
    """What happened in one simulated run."""

    events: list[Event] = field(default_factory=list)
    outputs: list[list[dict[str, Any]]] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    invalid: int = 0
    max_active: int = 0
    shutdown: Shutdown | None = None
    lengths: dict[str, list[int]] = field(default_factory=dict)


class _Checked:
    """Forwards to a method and checks the operations it returns, before the wrapper filters
    them."""

    def __init__(self, method: SearchMethod) -> None:
        self.method = method
        self.created: set[str] = set()
        self.last_length: dict[str, int] = {}
        self.ended: set[str] = set()
        self.closed: set[str] = set()

    def _check(self, where: str, ops: list[Operation]) -> list[Operation]:
        for op in ops:
            if isinstance(op, Create):
                if op.request_id in self.created:
                    raise ContractViolation(f"{where}: request id {op.request_id} reused")
                self.created.add(op.request_id)
            elif isinstance(op, ValidateAfter | Close):
                if op.request_id not in self.created:
                    raise ContractViolation(
                        f"{where}: {type(op).__name__} for {op.request_id}, which it never "
                        "created (or whose Create came later)"
                    )
                if isinstance(op, ValidateAfter):
                    if op.request_id in self.closed or op.request_id in self.ended:
                        raise ContractViolation(
                            f"{where}: ValidateAfter({op.length}) for {op.request_id} after it "
                            "was closed or ended"
                        )
                    last = self.last_length.get(op.request_id, 0)
                    if op.length <= last:
                        raise ContractViolation(
                            f"{where}: ValidateAfter({op.length}) for {op.request_id} does not "
                            f"exceed its previous length {last}"
                        )
                    self.last_length[op.request_id] = op.length
                else:
                    self.closed.add(op.request_id)
        return ops

    def initial_operations(self) -> list[Operation]:
        return self._check("initial_operations", self.method.initial_operations())

    def trial_created(self, request_id: str) -> list[Operation]:
        return self._check("trial_created", self.method.trial_created(request_id))

    def validation_completed(self, request_id: str, metric: float, length: int) -> list[Operation]:
        ops = self.method.validation_completed(request_id, metric, length)
        return self._check("validation_completed", ops)

    def trial_exited_early(self, request_id: str, reason: ExitedReason) -> list[Operation]:
        self.ended.add(request_id)
        return self._check("trial_exited_early", self.method.trial_exited_early(request_id, reason))

    def trial_closed(self, request_id: str) -> list[Operation]:
        self.ended.add(request_id)
        return self._check("trial_closed", self.method.trial_closed(request_id))

    def progress(self, partial: Mapping[str, float]) -> float:
        return self.method.progress(partial)

    def snapshot(self) -> dict[str, Any]:
        return self.method.snapshot()

    def restore(self, state: dict[str, Any]) -> None:
        self.method.restore(state)


def apply_event(searcher: Searcher, event: Event) -> list[Operation]:
    """Deliver one recorded event to ``searcher``."""
    kind = event[0]
    if kind == "initial":
        return searcher.initial_operations()
    if kind == "validation":
        return searcher.validation_completed(event[1], event[2], event[3])
    if kind == "exit":
        return searcher.trial_exited_early(event[1], ExitedReason(event[2]))
    if kind == "closed":
        return searcher.trial_closed(event[1])
    raise ValueError(f"unknown event {event!r}")


def _metric(quality: float, length: int, rng: random.Random) -> float:
    return quality + 1.0 / math.sqrt(1 + length) + rng.gauss(0, 0.01)


def drive(
    make: Callable[[], Searcher],
    *,
    seed: int,
    max_length: int = 100,
    invalid_probability: float = 0.05,
    error_probability: float = 0.03,
    cancel_probability: float = 0.02,
    kill_idle_probability: float = 0.01,
    max_events: int = 20_000,
    max_trials: int | None = None,
    max_concurrent: int | None = None,
) -> Trace:
    """Run a fresh searcher from ``make`` to the end against the simulated master, checking the
    contract as it goes. ``max_length`` is how far code-driven trials train on their own."""
    rng = random.Random(seed)
    searcher = make()
    searcher.method = _Checked(searcher.method)
    trace = Trace()
    quality: dict[str, float] = {}
    reported: dict[str, int] = {}

    def deliver(event: Event) -> None:
        try:
            ops = apply_event(searcher, event)
        except ValueError as exc:
            raise ContractViolation(f"{event[0]}: {exc}") from exc
        trace.events.append(event)
        trace.outputs.append([op_to_json(op) for op in ops])
        for op in ops:
            if isinstance(op, Create):
                trace.created.append(op.request_id)
                quality[op.request_id] = rng.random()
            elif isinstance(op, ValidateAfter):
                trace.lengths.setdefault(op.request_id, []).append(op.length)
            elif isinstance(op, Shutdown):
                trace.shutdown = op
        if event[0] == "exit" and event[2] == ExitedReason.INVALID_HP.value:
            trace.invalid += 1
        active = searcher.active_count()
        trace.max_active = max(trace.max_active, active)
        if max_concurrent is not None and active > max_concurrent:
            raise ContractViolation(
                f"after {event[0]}: {active} trials active, more than max_concurrent "
                f"{max_concurrent}"
            )
        counted = len(trace.created) - trace.invalid
        if max_trials is not None and counted > max_trials:
            raise ContractViolation(
                f"after {event[0]}: {counted} trials count toward max_trials {max_trials}"
            )
        progress = searcher.progress()
        if not 0.0 <= progress <= 1.0:
            raise ContractViolation(f"progress {progress} is outside [0, 1]")
        # Trials that report training done only add to it: half of every operation, then all.
        training = searcher.training()
        half = searcher.progress(dict.fromkeys(training, 0.5))
        whole = searcher.progress(dict.fromkeys(training, 1.0))
        if not progress <= half <= whole <= 1.0:
            raise ContractViolation(
                f"after {event[0]}: progress {progress}, with the training trials half way "
                f"{half}, all the way {whole}: it must not fall as trials train, nor pass 1"
            )

    deliver(("initial",))
    for _ in range(max_events):
        records = searcher.trials
        closing = [r for r, t in records.items() if t.closed and not t.exited]
        if searcher.code_driven:
            running = [r for r, t in records.items() if not t.closed and not t.exited]
            idle: list[str] = []
        else:
            running = [r for r, t in records.items() if t.pending and not t.closed and not t.exited]
            idle = [r for r, t in records.items() if not t.pending and not (t.closed or t.exited)]
        if not running and not closing:
            if searcher.shutdown is None:
                raise ContractViolation(
                    f"stuck: no trial is running or closing, {len(idle)} wait, and the method "
                    "has not shut down"
                )
            if idle:
                raise ContractViolation(
                    f"shut down with {len(idle)} trials neither closed nor ended: {idle[:3]}"
                )
            break
        if idle and rng.random() < kill_idle_probability:
            deliver(("exit", rng.choice(idle), ExitedReason.USER_CANCELED.value))
            continue
        request_id = rng.choice(running + closing)
        record = records[request_id]
        if record.closed:
            deliver(("closed", request_id))
            continue
        roll = rng.random()
        if roll < invalid_probability and record.completed_length == 0:
            deliver(("exit", request_id, ExitedReason.INVALID_HP.value))
        elif roll < invalid_probability + error_probability:
            deliver(("exit", request_id, ExitedReason.ERRORED.value))
        elif roll < invalid_probability + error_probability + cancel_probability:
            deliver(("exit", request_id, ExitedReason.USER_CANCELED.value))
        elif searcher.code_driven:
            last = reported.get(request_id, 0)
            if last >= max_length:
                deliver(("closed", request_id))
                continue
            length = min(max_length, last + rng.randint(1, max(1, max_length // 3)))
            reported[request_id] = length
            metric = _metric(quality[request_id], length, rng)
            deliver(("validation", request_id, metric, length))
        else:
            length = record.pending[0]
            metric = _metric(quality[request_id], length, rng)
            deliver(("validation", request_id, metric, length))
    else:
        raise ContractViolation(f"the search did not end within {max_events} events")
    if trace.shutdown is None:
        raise ContractViolation("the search ended without a Shutdown")
    unfinished = [r for r in trace.created if not searcher.is_closed(r)]
    if unfinished:
        raise ContractViolation(f"trials never closed: {unfinished[:3]}")
    return trace


def check_restore(make: Callable[[], Searcher], trace: Trace, at: int) -> None:
    """Replay ``trace`` up to event ``at``, move the state through a JSON snapshot into a fresh
    searcher, replay the rest and require the same operations."""
    first = make()
    for event in trace.events[:at]:
        apply_event(first, event)
    state = json.loads(json.dumps(first.snapshot(), allow_nan=False))
    second = make()
    second.restore(state)
    for index in range(at, len(trace.events)):
        event = trace.events[index]
        got = [op_to_json(op) for op in apply_event(second, event)]
        if got != trace.outputs[index]:
            raise ContractViolation(
                f"restored at event {at}, event {index} {event[:2]} gave {got} instead of "
                f"{trace.outputs[index]}"
            )


def check_replay(make: Callable[[], Searcher], trace: Trace, snap_at: int, upto: int) -> None:
    """Run ``trace`` live to event ``upto``, snapshotting at ``snap_at`` and logging the events
    after it (each through JSON, as the database stores them); rebuild a fresh searcher from the
    snapshot and the log, require its snapshot to equal the live one's, then the same operations
    for the rest of the trace."""
    if not 0 <= snap_at <= upto <= len(trace.events):
        raise ValueError(f"need 0 <= snap_at <= upto <= {len(trace.events)}")
    live = make()
    live.keeps_events = True
    for event in trace.events[:snap_at]:
        apply_event(live, event)
    state = json.loads(json.dumps(live.snapshot(), allow_nan=False))
    live.take_events()
    for event in trace.events[snap_at:upto]:
        apply_event(live, event)
    logged = json.loads(json.dumps(live.take_events(), allow_nan=False))
    rebuilt = make()
    rebuilt.restore(state)
    rebuilt.replay(logged)
    want = json.loads(json.dumps(live.snapshot(), allow_nan=False))
    got = json.loads(json.dumps(rebuilt.snapshot(), allow_nan=False))
    if got != want:
        raise ContractViolation(
            f"snapshot at event {snap_at} plus {len(logged)} logged events up to {upto} rebuilt "
            "a searcher whose snapshot differs from the live one's"
        )
    if rebuilt.take_events():
        raise ContractViolation("a replay left events to log again")
    for index in range(upto, len(trace.events)):
        event = trace.events[index]
        got_ops = [op_to_json(op) for op in apply_event(rebuilt, event)]
        if got_ops != trace.outputs[index]:
            raise ContractViolation(
                f"rebuilt from the snapshot at event {snap_at} and the log to {upto}, event "
                f"{index} {event[:2]} gave {got_ops} instead of {trace.outputs[index]}"
            )


def check_method(
    make: Callable[[], Searcher],
    *,
    seed: int,
    max_trials: int | None = None,
    max_concurrent: int | None = None,
    max_length: int = 100,
    invalid_probability: float = 0.05,
    error_probability: float = 0.03,
    cancel_probability: float = 0.02,
    restore_points: int = 2,
) -> Trace:
    """Drive a method to the end (:func:`drive`) and check snapshot/restore at a few points
    chosen from ``seed``. Raises :class:`ContractViolation` on the first broken rule."""
    trace = drive(
        make,
        seed=seed,
        max_length=max_length,
        invalid_probability=invalid_probability,
        error_probability=error_probability,
        cancel_probability=cancel_probability,
        max_trials=max_trials,
        max_concurrent=max_concurrent,
    )
    rng = random.Random(seed ^ 0x5EED)
    for _ in range(restore_points):
        check_restore(make, trace, rng.randint(0, len(trace.events)))
    return trace
