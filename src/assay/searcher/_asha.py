"""Asynchronous successive halving (ASHA): ``async_halving``, and the brackets of ``adaptive_asha``.

Two variants, as in Determined:

* :class:`AsyncHalving` (searcher-driven, ``stop_once: false``) *promotes*: a trial trains to a
  rung's length and waits; whenever the rung's top ``floor((n+1)/divisor)`` holds a trial not
  promoted yet, that trial gets a longer :class:`ValidateAfter` (the master resumes it from its
  checkpoint). A waiting trial stays open until the method knows it will never be promoted.
* :class:`AsyncHalvingStopping` (``stop_once: true``, and every code-driven search) *stops*: a
  trial that reaches a rung continues only while it ranks within the top
  ``max(floor(n/divisor), 1)`` of the ``n`` results there; otherwise it is closed for good.

Rung ``i`` of ``num_rungs`` needs ``max(floor(max_length / divisor**(num_rungs-i-1)), 1)``
units (absolute lengths). Trials that exit early count as the worst result where they were;
trials that exit with invalid hyperparameters are forgotten and replaced.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from assay.protocol import ExitedReason
from assay.searcher._base import (
    WORST_METRIC,
    new_request_id,
    new_trial_seed,
    rng_state,
    set_rng_state,
)
from assay.searcher._ops import (
    EVERY_TRIAL_FAILED,
    Close,
    Create,
    Operation,
    Shutdown,
    ValidateAfter,
)
from assay.searcher._source import Outcome, ParamSource, RandomSource


def rung_lengths(max_length: int, divisor: float, num_rungs: int) -> list[int]:
    """The absolute length each rung trains to (Determined's rule)."""
    return [max(int(max_length / divisor ** (num_rungs - i - 1)), 1) for i in range(num_rungs)]


def default_concurrency(divisor: float, num_rungs: int, max_trials: int) -> int:
    """Without ``max_concurrent_trials``: enough trials that one can reach the top rung."""
    return max(min(int(divisor ** (num_rungs - 1)), max_trials), 1)


@dataclass
class _Entry:
    metric: float
    request_id: str
    promoted: bool = False


@dataclass
class _Rung:
    length: int
    entries: list[_Entry] = field(default_factory=list)
    outstanding: int = 0

    def insert(self, request_id: str, metric: float, *, ties_after: bool) -> int:
        """Insert in metric order; a tie goes after the equal results when ``ties_after``."""
        keys = [e.metric for e in self.entries]
        index = (bisect.bisect_right if ties_after else bisect.bisect_left)(keys, metric)
        self.entries.insert(index, _Entry(metric, request_id))
        return index

    def remove(self, request_id: str) -> None:
        self.entries = [e for e in self.entries if e.request_id != request_id]

    def to_json(self) -> dict[str, Any]:
        return {
            "length": self.length,
            "entries": [[e.metric, e.request_id, e.promoted] for e in self.entries],
            "outstanding": self.outstanding,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> _Rung:
        entries = [_Entry(float(m), str(r), bool(p)) for m, r, p in raw["entries"]]
        return cls(int(raw["length"]), entries, int(raw["outstanding"]))


class _HalvingBase:
    """Bookkeeping shared by both variants: trials, rungs, replacement, shutdown, snapshot."""

    code_driven = False

    def __init__(
        self,
        space: dict[str, Any],
        *,
        max_length: int,
        num_rungs: int,
        divisor: float,
        max_trials: int,
        max_concurrent: int,
        rng: random.Random,
        source: ParamSource | None = None,
        own_source: bool = True,
        source_checkpoint: str | None = None,
    ) -> None:
        if divisor <= 1:
            raise ValueError(f"divisor must be > 1, got {divisor}")
        if num_rungs < 1:
            raise ValueError(f"num_rungs must be >= 1, got {num_rungs}")
        self.space = space
        self.max_length = max_length
        self.divisor = divisor
        self.max_trials = max_trials
        self.rng = rng
        self.source: ParamSource = source if source is not None else RandomSource(space, rng)
        self.own_source = own_source
        self.source_checkpoint = source_checkpoint
        self.concurrency = (
            min(max_concurrent, max_trials)
            if max_concurrent > 0
            else default_concurrency(divisor, num_rungs, max_trials)
        )
        self.rungs = [_Rung(n) for n in rung_lengths(max_length, divisor, num_rungs)]
        self.trial_rung: dict[str, int] = {}
        self.busy: list[str] = []
        self.exited: set[str] = set()
        self.closed: set[str] = set()
        self.done: set[str] = set()
        self.told: set[str] = set()
        self.invalid = 0
        self.errored = 0
        self.shut = False

    # -- shared helpers -----------------------------------------------------------------------

    @property
    def top(self) -> int:
        return len(self.rungs) - 1

    def valid_count(self) -> int:
        return len(self.trial_rung) - self.invalid

    def _create(self) -> Create:
        request_id = new_request_id(self.rng)
        hparams = self.source.suggest(request_id)
        self.trial_rung[request_id] = 0
        self.rungs[0].outstanding += 1
        self.busy.append(request_id)
        return Create(
            request_id, hparams, new_trial_seed(self.rng), checkpoint=self.source_checkpoint
        )

    def _fill(self) -> list[Operation]:
        ops: list[Operation] = []
        while self.valid_count() < self.max_trials and len(self.busy) < self.concurrency:
            ops.append(self._create())
        return ops

    def _tell(self, request_id: str, outcome: Outcome, metric: float | None) -> None:
        # The source learns from rung-0 results only: every trial has one, at the same length,
        # so they are comparable (BOHB's model is fitted per budget for the same reason).
        if request_id in self.told:
            return
        self.told.add(request_id)
        self.source.finish(request_id, outcome, metric)

    def _close(self, request_id: str) -> list[Operation]:
        if request_id in self.closed or request_id in self.exited:
            return []
        self.closed.add(request_id)
        return [Close(request_id)]

    def _forget_invalid(self, request_id: str) -> None:
        self.invalid += 1
        rung_index = self.trial_rung[request_id]
        for rung in self.rungs[: rung_index + 1]:
            rung.remove(request_id)
        if request_id in self.busy:
            self.busy.remove(request_id)
            self.rungs[rung_index].outstanding -= 1
        self._tell(request_id, Outcome.FAIL, None)

    def _maybe_shutdown(self) -> list[Operation]:
        if self.shut or self.valid_count() < self.max_trials:
            return []
        if any(rid not in self.done for rid in self.trial_rung):
            return []
        self.shut = True
        finished = len(self.done) - self.invalid
        failed = finished > 0 and self.errored == finished
        return [Shutdown(failure=failed, message=EVERY_TRIAL_FAILED if failed else "")]

    def trial_created(self, request_id: str) -> list[Operation]:
        return [ValidateAfter(request_id, self.rungs[0].length)]

    def stage_of(self, request_id: str) -> str | None:
        # A trial's rung is the one it trains towards or, waiting, the one it reached.
        rung = self.trial_rung.get(request_id)
        return None if rung is None else f"rung {rung + 1} of {len(self.rungs)}"

    def initial_operations(self) -> list[Operation]:
        return self._fill() + self._maybe_shutdown()

    def progress(self, partial: Mapping[str, float]) -> float:
        # Determined's estimate: the search is about done once 1.2 * max_trials results reached
        # the lowest rung. A trial training towards that rung counts the share of it it has
        # reported. (Code-driven trials report shares of their whole run, not of the rung.)
        if self.max_trials <= 0:
            return 1.0
        towards = 0.0
        if not self.code_driven:
            # A busy trial still on the lowest rung has no result there yet (a result takes
            # it out of ``busy``; only a move up puts it back).
            towards = sum(
                partial.get(rid, 0.0) for rid in self.busy if self.trial_rung.get(rid) == 0
            )
        reported = (len(self.rungs[0].entries) + towards) / (1.2 * self.max_trials)
        finished = (len(self.done) - self.invalid) / self.max_trials
        return min(1.0, max(reported, finished))

    def snapshot(self) -> dict[str, Any]:
        return {
            "rng": rng_state(self.rng),
            "rungs": [r.to_json() for r in self.rungs],
            "trial_rung": dict(self.trial_rung),
            "busy": list(self.busy),
            "exited": sorted(self.exited),
            "closed": sorted(self.closed),
            "done": sorted(self.done),
            "told": sorted(self.told),
            "invalid": self.invalid,
            "errored": self.errored,
            "shut": self.shut,
            "source": self.source.snapshot() if self.own_source else None,
        }

    def restore(self, state: dict[str, Any]) -> None:
        set_rng_state(self.rng, state["rng"])
        self.rungs = [_Rung.from_json(r) for r in state["rungs"]]
        self.trial_rung = {k: int(v) for k, v in state["trial_rung"].items()}
        self.busy = list(state["busy"])
        self.exited = set(state["exited"])
        self.closed = set(state["closed"])
        self.done = set(state["done"])
        self.told = set(state["told"])
        self.invalid = int(state["invalid"])
        self.errored = int(state["errored"])
        self.shut = bool(state["shut"])
        if self.own_source:
            self.source.restore(state["source"])


class AsyncHalving(_HalvingBase):
    """Promotion-based ASHA for searcher-driven trials (see the module docstring)."""

    def validation_completed(self, request_id: str, metric: float, length: int) -> list[Operation]:
        if request_id not in self.busy or request_id in self.done:
            return []
        self.busy.remove(request_id)
        if self.trial_rung[request_id] == 0:
            self._tell(request_id, Outcome.COMPLETE, metric)
        ops, _ = self._record(request_id, metric)
        return ops + self._after_result()

    def _record(self, request_id: str, metric: float) -> tuple[list[Operation], bool]:
        """Put a result in the trial's rung; returns the operations and whether new work (a
        promotion) took the slot this result freed."""
        index = self.trial_rung[request_id]
        rung = self.rungs[index]
        rung.outstanding -= 1
        if index == self.top:
            rung.insert(request_id, metric, ties_after=True)
            return self._close(request_id), False
        promoted = self._promotion(rung, request_id, metric)
        if promoted is None:
            return [], False
        nxt = self.rungs[index + 1]
        self.trial_rung[promoted] = index + 1
        nxt.outstanding += 1
        if promoted in self.exited:
            # It cannot train further: it reaches the next rung with the worst result.
            return self._record(promoted, WORST_METRIC)
        if nxt.length <= rung.length:
            # Rungs that round to the same length: its result there is the one it has.
            same = next(e.metric for e in rung.entries if e.request_id == promoted)
            return self._record(promoted, same)
        self.busy.append(promoted)
        return [ValidateAfter(promoted, nxt.length)], True

    def _promotion(self, rung: _Rung, request_id: str, metric: float) -> str | None:
        """Insert the result; the trial that now deserves promotion, if any (at most one)."""
        old_promote = int(len(rung.entries) / self.divisor)
        num_promote = int((len(rung.entries) + 1) / self.divisor)
        index = rung.insert(request_id, metric, ties_after=True)
        if index < num_promote:
            rung.entries[index].promoted = True
            return request_id
        if num_promote != old_promote and not rung.entries[old_promote].promoted:
            rung.entries[old_promote].promoted = True
            return rung.entries[old_promote].request_id
        return None

    def _close_out(self) -> list[Operation]:
        """Close the trials no later result can promote: those not promoted in every rung below
        which no trial is still training."""
        ops: list[Operation] = []
        for rung in self.rungs:
            if rung.outstanding > 0:
                break
            for entry in rung.entries:
                if not entry.promoted:
                    ops += self._close(entry.request_id)
        return ops

    def _after_result(self) -> list[Operation]:
        ops = self._fill()
        if len(self.rungs[0].entries) >= self.max_trials:
            ops += self._close_out()
        return ops + self._maybe_shutdown()

    def trial_exited_early(self, request_id: str, reason: ExitedReason) -> list[Operation]:
        if request_id not in self.trial_rung or request_id in self.done:
            return []
        self.done.add(request_id)
        if reason is ExitedReason.INVALID_HP:
            self._forget_invalid(request_id)
            return self._after_result()
        self.exited.add(request_id)
        if reason is ExitedReason.ERRORED:
            self.errored += 1
        outcome = Outcome.PRUNED if reason is ExitedReason.USER_CANCELED else Outcome.FAIL
        self._tell(request_id, outcome, None)
        ops: list[Operation] = []
        if request_id in self.busy:
            self.busy.remove(request_id)
            ops, _ = self._record(request_id, WORST_METRIC)
        return ops + self._after_result()

    def trial_closed(self, request_id: str) -> list[Operation]:
        if request_id not in self.trial_rung or request_id in self.done:
            return []
        if request_id not in self.closed:
            # Its code ended on its own before the method closed it: an early exit.
            return self.trial_exited_early(request_id, ExitedReason.USER_CANCELED)
        self.done.add(request_id)
        return self._after_result()


class AsyncHalvingStopping(_HalvingBase):
    """Stopping-based ASHA: for ``stop_once`` searcher-driven trials, and for code-driven ones
    (``code_driven=True``: validations arrive at whatever lengths the code reports, and one
    report can pass several rungs at once)."""

    def __init__(self, space: dict[str, Any], *, code_driven: bool = False, **kwargs: Any) -> None:
        super().__init__(space, **kwargs)
        self.code_driven = code_driven

    def trial_created(self, request_id: str) -> list[Operation]:
        if self.code_driven:
            return []
        return super().trial_created(request_id)

    def _fill(self) -> list[Operation]:
        if self.code_driven:
            # Code-driven trials hold their slot from creation until they end.
            self.busy = [rid for rid in self.busy if rid not in self.done]
        return super()._fill()

    def validation_completed(self, request_id: str, metric: float, length: int) -> list[Operation]:
        if request_id not in self.trial_rung or request_id in self.done:
            return []
        if request_id in self.closed:
            return []
        if not self.code_driven:
            if request_id not in self.busy:
                return []
            self.busy.remove(request_id)
        ops: list[Operation] = []
        stopped = False
        index = self.trial_rung[request_id]
        while index < len(self.rungs):
            rung = self.rungs[index]
            if length < rung.length:
                break
            position = rung.insert(request_id, metric, ties_after=False)
            rung.outstanding -= 1
            if index == 0:
                self._tell(request_id, Outcome.COMPLETE, metric)
            keep = max(int(len(rung.entries) / self.divisor), 1)
            if index == self.top or position >= keep:
                stopped = True
                break
            index += 1
            self.trial_rung[request_id] = index
            self.rungs[index].outstanding += 1
        if stopped:
            ops += self._close(request_id)
            if self.code_driven and request_id in self.busy:
                self.busy.remove(request_id)
        elif not self.code_driven:
            self.busy.append(request_id)
            ops.append(ValidateAfter(request_id, self.rungs[self.trial_rung[request_id]].length))
        return ops + self._fill() + self._maybe_shutdown()

    def trial_exited_early(self, request_id: str, reason: ExitedReason) -> list[Operation]:
        if request_id not in self.trial_rung or request_id in self.done:
            return []
        self.done.add(request_id)
        if reason is ExitedReason.INVALID_HP:
            self._forget_invalid(request_id)
            if self.code_driven and request_id in self.busy:
                self.busy.remove(request_id)
            return self._fill() + self._maybe_shutdown()
        self.exited.add(request_id)
        if reason is ExitedReason.ERRORED:
            self.errored += 1
        self._tell(
            request_id,
            Outcome.PRUNED if reason is ExitedReason.USER_CANCELED else Outcome.FAIL,
            None,
        )
        if request_id not in self.closed:
            rung = self.rungs[self.trial_rung[request_id]]
            rung.insert(request_id, WORST_METRIC, ties_after=True)
            rung.outstanding -= 1
        if request_id in self.busy:
            self.busy.remove(request_id)
        return self._fill() + self._maybe_shutdown()

    def trial_closed(self, request_id: str) -> list[Operation]:
        if request_id not in self.trial_rung or request_id in self.done:
            return []
        if request_id not in self.closed:
            # The trial's code finished on its own (code-driven: it trained as long as it
            # wanted). It keeps the results it reported; its slot goes to a new trial.
            self.closed.add(request_id)
            self.rungs[self.trial_rung[request_id]].outstanding -= 1
            self._tell(request_id, Outcome.PRUNED, None)
        self.done.add(request_id)
        if request_id in self.busy:
            self.busy.remove(request_id)
        return self._fill() + self._maybe_shutdown()

    def snapshot(self) -> dict[str, Any]:
        return {**super().snapshot(), "code_driven": self.code_driven}
