"""Early-stopping rules (``searcher.early_stopping``), attachable to any search method.

:class:`EarlyStopping` wraps a method: events pass through unchanged, and after each validation
the rule may add a :class:`Close` for that trial (the master turns it into an early stop). A
trial's *history* is its reported metrics in order; step ``t`` is its ``t``-th report, as NNI's
assessors count.

* :class:`MedianStopRule` (NNI's Medianstop): at step ``t >= start_step``, stop the trial when
  its best result so far is worse than the median of the other trials' running averages at
  step ``t`` (their mean over steps ``1..t``), counting only trials that reached step ``t`` and
  only once at least ``min_trials`` of them have.
* :class:`CurveFitRule` (in the spirit of NNI's Curvefitting, much simpler): at steps
  ``start_step``, ``start_step + gap``, ..., fit ``y(t) = a + b * t**-c`` to the history by least
  squares (``a`` and ``b`` in closed form for each ``c`` on a fixed grid, keeping the best fit),
  predict ``y(epoch_num)``, and stop the trial when the prediction is worse than the best result
  of the trials that already finished by more than ``1 - threshold`` of its magnitude
  (``threshold = 0.95``: 5 % worse). A power law is the usual shape of learning curves; this
  is one honest model, not NNI's ensemble of twelve fitted by MCMC.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Protocol

from assay.protocol import ExitedReason
from assay.searcher._base import SearchMethod, stage_of
from assay.searcher._ops import Close, Operation


class StopRule(Protocol):
    def should_stop(
        self, request_id: str, histories: dict[str, list[float]], finished: set[str]
    ) -> bool:
        """Whether ``request_id`` (whose history just grew) should stop now. Pure."""
        ...


class MedianStopRule:
    """NNI's Medianstop; see the module docstring."""

    def __init__(self, start_step: int = 0, min_trials: int = 1) -> None:
        self.start_step = start_step
        self.min_trials = max(1, min_trials)

    def should_stop(
        self, request_id: str, histories: dict[str, list[float]], finished: set[str]
    ) -> bool:
        history = histories[request_id]
        step = len(history)
        if step == 0 or step < self.start_step:
            return False
        averages = sorted(
            sum(other[:step]) / step
            for rid, other in histories.items()
            if rid != request_id and len(other) >= step
        )
        if len(averages) < self.min_trials:
            return False
        median = averages[len(averages) // 2]
        return min(history) > median


_EXPONENTS = [0.05 * i for i in range(1, 61)]


def fit_power_law(history: list[float]) -> tuple[float, float, float] | None:
    """Least-squares ``(a, b, c)`` of ``y(t) = a + b * t**-c`` over ``t = 1..len(history)``;
    None with fewer than three points."""
    n = len(history)
    if n < 3:
        return None
    best: tuple[float, float, float, float] | None = None
    mean_y = sum(history) / n
    for c in _EXPONENTS:
        xs = [t**-c for t in range(1, n + 1)]
        mean_x = sum(xs) / n
        sxx = sum((x - mean_x) ** 2 for x in xs)
        if sxx == 0:
            continue
        sxy = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, history, strict=True))
        b = sxy / sxx
        a = mean_y - b * mean_x
        sse = sum((a + b * x - y) ** 2 for x, y in zip(xs, history, strict=True))
        if best is None or sse < best[0]:
            best = (sse, a, b, c)
    if best is None:
        return None
    _, a, b, c = best
    return a, b, c


def extrapolate(history: list[float], step: int) -> float | None:
    """The power-law prediction of the history's value at ``step``."""
    fit = fit_power_law(history)
    if fit is None:
        return None
    a, b, c = fit
    return float(a + b * step**-c)


class CurveFitRule:
    """A power-law learning-curve extrapolation; see the module docstring."""

    def __init__(
        self, epoch_num: int, start_step: int = 6, threshold: float = 0.95, gap: int = 1
    ) -> None:
        self.epoch_num = epoch_num
        self.start_step = max(start_step, 3)
        self.threshold = threshold
        self.gap = max(1, gap)

    def should_stop(
        self, request_id: str, histories: dict[str, list[float]], finished: set[str]
    ) -> bool:
        history = histories[request_id]
        step = len(history)
        if step < self.start_step or (step - self.start_step) % self.gap != 0:
            return False
        if step >= self.epoch_num:
            return False
        done = [min(histories[rid]) for rid in finished if histories.get(rid)]
        if not done:
            return False
        best = min(done)
        predicted = extrapolate(history, self.epoch_num)
        if predicted is None or math.isnan(predicted):
            return False
        return predicted > best + (1 - self.threshold) * abs(best)


class EarlyStopping:
    """Wrap ``inner`` with an early-stopping ``rule``; see the module docstring."""

    def __init__(self, inner: SearchMethod, rule: StopRule) -> None:
        self.inner = inner
        self.rule = rule
        self.histories: dict[str, list[float]] = {}
        self.finished: set[str] = set()
        self.closed: set[str] = set()

    def _note(self, ops: list[Operation]) -> list[Operation]:
        for op in ops:
            if isinstance(op, Close):
                self.closed.add(op.request_id)
        return ops

    def initial_operations(self) -> list[Operation]:
        return self._note(self.inner.initial_operations())

    def trial_created(self, request_id: str) -> list[Operation]:
        self.histories.setdefault(request_id, [])
        return self._note(self.inner.trial_created(request_id))

    def validation_completed(self, request_id: str, metric: float, length: int) -> list[Operation]:
        ops = self._note(self.inner.validation_completed(request_id, metric, length))
        if request_id in self.finished:
            return ops
        self.histories.setdefault(request_id, []).append(metric)
        if request_id in self.closed:
            return ops
        if self.rule.should_stop(request_id, self.histories, self.finished):
            self.closed.add(request_id)
            ops.append(Close(request_id))
        return ops

    def trial_exited_early(self, request_id: str, reason: ExitedReason) -> list[Operation]:
        self.finished.add(request_id)
        return self._note(self.inner.trial_exited_early(request_id, reason))

    def trial_closed(self, request_id: str) -> list[Operation]:
        self.finished.add(request_id)
        return self._note(self.inner.trial_closed(request_id))

    def progress(self, partial: Mapping[str, float]) -> float:
        return self.inner.progress(partial)

    def stage_of(self, request_id: str) -> str | None:
        return stage_of(self.inner, request_id)

    def snapshot(self) -> dict[str, Any]:
        return {
            "inner": self.inner.snapshot(),
            "histories": {k: list(v) for k, v in self.histories.items()},
            "finished": sorted(self.finished),
            "closed": sorted(self.closed),
        }

    def restore(self, state: dict[str, Any]) -> None:
        self.inner.restore(state["inner"])
        self.histories = {k: [float(x) for x in v] for k, v in state["histories"].items()}
        self.finished = set(state["finished"])
        self.closed = set(state["closed"])
