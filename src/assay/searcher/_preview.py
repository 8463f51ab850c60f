"""``assay preview-search``: what a searcher would do, simulated, without running anything.

The searcher is driven by a small discrete-event simulation: trials train at one unit of length
per unit of time, as many at once as the searcher allows; each trial has a random quality and
its metric follows a noisy decreasing curve of its length, all drawn from the seed. Closed trials
end at once. Code-driven trials report every ``max_length / 16`` units (at least one) and end on
their own at ``max_length``. The figures depend on the simulated metrics only through which
trials are promoted or stopped, so trial counts, lengths and compute are those of a real run up
to exits and crashes.
"""

from __future__ import annotations

import heapq
import math
import random
from dataclasses import dataclass, field
from typing import Any

from assay.config import ExperimentConfig
from assay.searcher._asha import AsyncHalving, AsyncHalvingStopping
from assay.searcher._base import Searcher, SearchMethod
from assay.searcher._early_stop import EarlyStopping
from assay.searcher._factory import make_searcher
from assay.searcher._hyperband import SuccessiveHalving
from assay.searcher._ops import Close, Create, Shutdown
from assay.searcher._tournament import Tournament

_MAX_EVENTS = 2_000_000


@dataclass(frozen=True)
class BracketPreview:
    """One bracket (or the whole search, for single-bracket methods)."""

    rungs: tuple[int, ...]
    max_trials: int
    max_concurrent: int


@dataclass
class SearchPreview:
    """The outcome of a simulated search."""

    searcher: str
    unit: str
    code_driven: bool
    trials: int = 0
    lengths: dict[int, int] = field(default_factory=dict)
    """For each length trained to, how many trials reached it."""
    brackets: list[BracketPreview] = field(default_factory=list)
    total_compute: int = 0
    """Units trained over all trials (a promoted trial resumes from its checkpoint)."""
    max_concurrency: int = 0
    failure: str | None = None

    def render(self) -> str:
        driven = "code-driven" if self.code_driven else "searcher-driven"
        lines = [
            f"searcher: {self.searcher} ({driven})",
            f"trials: {self.trials}",
            f"total compute: {self.total_compute} {self.unit}",
            f"max concurrent trials: {self.max_concurrency}",
        ]
        if self.brackets:
            lines += ["", "bracket  rungs (lengths)                     trials  concurrency"]
            for i, b in enumerate(self.brackets):
                rungs = ", ".join(str(r) for r in b.rungs)
                lines.append(f"{i + 1:>7}  {rungs:<35} {b.max_trials:>6}  {b.max_concurrent:>11}")
        if self.lengths:
            lines += ["", f"length ({self.unit})  trials reaching it"]
            for length, count in sorted(self.lengths.items()):
                lines.append(f"{length:>14}  {count:>18}")
        if self.failure:
            lines += ["", f"the simulated search failed: {self.failure}"]
        return "\n".join(lines)


def describe_brackets(method: SearchMethod) -> list[BracketPreview]:
    """The brackets of the methods assay knows; empty for the others."""
    if isinstance(method, EarlyStopping):
        return describe_brackets(method.inner)
    if isinstance(method, Tournament):
        return [b for m in method.methods for b in describe_brackets(m)]
    if isinstance(method, AsyncHalving | AsyncHalvingStopping):
        rungs = tuple(r.length for r in method.rungs)
        return [BracketPreview(rungs, method.max_trials, method.concurrency)]
    if isinstance(method, SuccessiveHalving):
        return [BracketPreview(tuple(method.lengths), method.num_trials, method.cap)]
    return []


def _loss(quality: float, length: int, scale: float, rng: random.Random) -> float:
    return quality + 1.0 / math.sqrt(1.0 + length / scale) + rng.gauss(0.0, 0.01)


def simulate(
    searcher: Searcher,
    *,
    seed: int,
    max_length: int | None,
    smaller_is_better: bool = True,
) -> tuple[dict[str, int], dict[int, int], int, Shutdown | None]:
    """Run ``searcher`` to the end. Returns each trial's trained length, trials per validated
    length, the largest number of active trials, and the final Shutdown."""
    rng = random.Random(seed)
    horizon = max_length or 100
    step = max(1, horizon // 16)
    scale = max(1.0, horizon / 10)
    quality: dict[str, float] = {}
    trained: dict[str, int] = {}
    reached: dict[int, set[str]] = {}
    queue: list[tuple[float, int, str, str]] = []  # (time, tie, kind, request id)
    now = 0.0
    counter = 0
    max_active = 0
    shutdown: Shutdown | None = None
    scheduled: dict[str, int] = {}
    # The trials Searcher.active_count would count, kept up to date as events name them: asking
    # the searcher to count over every trial it ever made, after every event, made a big search
    # quadratic. Only a trial an operation names, or the one whose event it is, changes.
    active: set[str] = set()

    def recount(request_ids: list[str]) -> None:
        for request_id in request_ids:
            if not searcher.is_closed(request_id) and (
                searcher.code_driven or searcher.pending_length(request_id) is not None
            ):
                active.add(request_id)
            else:
                active.discard(request_id)

    def sign(loss: float) -> float:
        return loss if smaller_is_better else -loss

    def schedule(request_id: str, kind: str, at: float) -> None:
        nonlocal counter
        counter += 1
        heapq.heappush(queue, (at, counter, kind, request_id))

    def plan(request_id: str) -> None:
        # The next thing this trial does: finish its pending operation, report (code-driven),
        # or, once closed, end.
        if searcher.is_closed(request_id):
            record = searcher.trials[request_id]
            if not record.exited:
                schedule(request_id, "closed", now)
            return
        if searcher.code_driven:
            if request_id in scheduled:
                return
            target = min(horizon, trained[request_id] + step)
            if trained[request_id] >= horizon:
                schedule(request_id, "closed", now)
                return
        else:
            pending = searcher.pending_length(request_id)
            if pending is None or scheduled.get(request_id) == pending:
                return
            target = pending
        scheduled[request_id] = target
        schedule(request_id, "report", now + max(0, target - trained[request_id]))

    def absorb(ops: list[Any], event_of: str | None = None) -> None:
        nonlocal shutdown, max_active
        for op in ops:
            if isinstance(op, Create):
                quality[op.request_id] = rng.random()
                trained[op.request_id] = 0
            elif isinstance(op, Shutdown) and shutdown is None:
                shutdown = op
        # In the order the operations name them: a set's order changes with the process's
        # string hashing, and with it the order of simultaneous events, so the figures.
        touched = [r for r in dict.fromkeys(getattr(op, "request_id", None) for op in ops) if r]
        for request_id in touched:
            if isinstance(request_id, str) and request_id in trained:
                plan(request_id)
        recount([r for r in [*touched, event_of] if isinstance(r, str)])
        if any(isinstance(op, Close) for op in ops) or touched:
            max_active = max(max_active, len(active))

    absorb(searcher.initial_operations())
    for _ in range(_MAX_EVENTS):
        if not queue:
            break
        now, _, kind, request_id = heapq.heappop(queue)
        record = searcher.trials[request_id]
        if record.exited:
            continue
        if kind == "closed":
            absorb(searcher.trial_closed(request_id), request_id)
            continue
        target = scheduled.pop(request_id, None)
        if target is None or record.closed:
            plan(request_id)
            continue
        trained[request_id] = max(trained[request_id], target)
        reached.setdefault(target, set()).add(request_id)
        loss = _loss(quality[request_id], target, scale, rng)
        ops = searcher.validation_completed(request_id, sign(loss), target)
        absorb(ops, request_id)
        plan(request_id)
    lengths = {length: len(ids) for length, ids in reached.items()}
    return trained, lengths, max_active, shutdown


def preview_search(cfg: ExperimentConfig, seed: int) -> SearchPreview:
    """Simulate ``cfg``'s searcher (see the module docstring)."""
    sc = cfg.searcher
    searcher = make_searcher(cfg, seed)
    plan = sc.plan()
    trained, lengths, max_active, shutdown = simulate(
        searcher,
        seed=seed,
        max_length=plan.longest,
        smaller_is_better=sc.smaller_is_better,
    )
    return SearchPreview(
        searcher=sc.name,
        unit=plan.unit,
        code_driven=plan.code_driven,
        trials=len(trained),
        lengths=lengths,
        brackets=describe_brackets(searcher.method),
        total_compute=sum(trained.values()),
        max_concurrency=max_active,
        failure=shutdown.message if shutdown is not None and shutdown.failure else None,
    )
