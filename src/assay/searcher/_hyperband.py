"""``hyperband``: Li et al.'s Hyperband, as NNI runs it, on assay's absolute lengths.

With ``R = max_length`` and ``eta = divisor``: ``s_max = floor(log_eta(R))``; bracket
``s = s_max .. 0`` starts ``n = ceil((s_max+1)/(s+1) * eta**s)`` trials and runs successive
halving over ``s+1`` rungs of ``max(floor(R / eta**(s-i)), 1)`` units, keeping the best
``floor(n_i / eta)`` at each rung. ``max_trials``, when given, rescales the bracket sizes to
sum to it (Determined-style configs), at least one trial a bracket while there are more trials
than brackets; with fewer, only the most aggressive ``max_trials`` brackets run, one trial each.

Searcher-driven brackets are synchronous (:class:`SuccessiveHalving`: a rung is decided when all
its trials reported); code-driven ones cannot pause trials, so each bracket is an
:class:`~assay.searcher.AsyncHalvingStopping` with that bracket's rungs.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from assay.protocol import ExitedReason
from assay.searcher._adaptive import bracket_max_concurrent
from assay.searcher._asha import AsyncHalvingStopping, rung_lengths
from assay.searcher._base import (
    WORST_METRIC,
    SearchMethod,
    new_request_id,
    new_trial_seed,
    rng_state,
    set_rng_state,
)
from assay.searcher._ops import Close, Create, Operation, Shutdown, ValidateAfter
from assay.searcher._source import Outcome, ParamSource, RandomSource
from assay.searcher._tournament import Tournament


@dataclass(frozen=True)
class Bracket:
    """One Hyperband bracket: how many trials start, and the length of each rung."""

    trials: int
    lengths: tuple[int, ...]


def hyperband_brackets(
    max_length: int, divisor: float, max_trials: int | None = None
) -> list[Bracket]:
    """The brackets, most aggressive (most rungs) first."""
    if divisor <= 1:
        raise ValueError(f"divisor must be > 1, got {divisor}")
    s_max = 0
    while divisor ** (s_max + 1) <= max_length:
        s_max += 1
    brackets = []
    for s in range(s_max, -1, -1):
        n = math.ceil((s_max + 1) / (s + 1) * divisor**s)
        brackets.append(Bracket(n, tuple(rung_lengths(max_length, divisor, s + 1))))
    if max_trials is not None and max_trials > 0:
        total = sum(b.trials for b in brackets)
        sizes = [max(int(b.trials * max_trials / total), 1) for b in brackets]
        sizes[0] += max(max_trials - sum(sizes), 0)
        # One trial a bracket is more than max_trials when there are fewer trials than
        # brackets: the most aggressive brackets (those NNI starts first) keep theirs, and
        # the others are left out, so the search never creates more than max_trials.
        excess = sum(sizes) - max_trials
        for i in reversed(range(len(sizes))):
            cut = min(excess, sizes[i])
            sizes[i] -= cut
            excess -= cut
        brackets = [Bracket(n, b.lengths) for n, b in zip(sizes, brackets, strict=True) if n > 0]
    return brackets


class SuccessiveHalving:
    """One synchronous successive-halving bracket (searcher-driven trials).

    All ``num_trials`` train to the first rung; once every one has reported (or exited), the
    best ``floor(n / divisor)`` are given the next rung's length and the rest are closed; and so
    on to the last rung. At most ``max_concurrent`` trials train at once (0: no limit).
    """

    def __init__(
        self,
        space: dict[str, Any],
        *,
        lengths: list[int],
        num_trials: int,
        divisor: float,
        rng: random.Random,
        max_concurrent: int = 0,
        source: ParamSource | None = None,
        own_source: bool = True,
        source_checkpoint: str | None = None,
    ) -> None:
        self.lengths = list(lengths)
        self.num_trials = num_trials
        self.divisor = divisor
        self.rng = rng
        self.cap = max_concurrent if max_concurrent > 0 else num_trials
        self.source: ParamSource = source if source is not None else RandomSource(space, rng)
        self.own_source = own_source
        self.source_checkpoint = source_checkpoint
        self.rung = 0
        self.members: list[str] = []
        self.results: dict[str, float] = {}
        self.queue: list[str] = []
        self.busy: list[str] = []
        self.exited: set[str] = set()
        self.closed: set[str] = set()
        self.done: set[str] = set()
        self.created: list[str] = []
        self.complete = False
        self.shut = False

    def _create(self) -> Create:
        request_id = new_request_id(self.rng)
        hparams = self.source.suggest(request_id)
        self.created.append(request_id)
        self.members.append(request_id)
        self.busy.append(request_id)
        return Create(
            request_id, hparams, new_trial_seed(self.rng), checkpoint=self.source_checkpoint
        )

    def _close(self, request_id: str) -> list[Operation]:
        if request_id in self.closed or request_id in self.exited:
            return []
        self.closed.add(request_id)
        return [Close(request_id)]

    def stage_of(self, request_id: str) -> str | None:
        # The bracket's rungs are decided together: its trials stand at its current rung.
        if request_id not in self.members:
            return None
        return f"rung {self.rung + 1} of {len(self.lengths)}"

    def _advance(self) -> list[Operation]:
        ops: list[Operation] = []
        while True:
            if self.complete:
                break
            if self.rung == 0:
                while len(self.members) < self.num_trials and len(self.busy) < self.cap:
                    ops.append(self._create())
            while self.queue and len(self.busy) < self.cap:
                request_id = self.queue.pop(0)
                self.busy.append(request_id)
                ops.append(ValidateAfter(request_id, self.lengths[self.rung]))
            waiting = self.busy or self.queue
            if waiting or (self.rung == 0 and len(self.members) < self.num_trials):
                break
            ops += self._decide()
        return ops + self._maybe_shutdown()

    def _decide(self) -> list[Operation]:
        """Every member of the current rung reported: promote the best, close the rest."""
        order = {rid: i for i, rid in enumerate(self.members)}
        ranked = sorted(self.members, key=lambda rid: (self.results[rid], order[rid]))
        ops: list[Operation] = []
        if self.rung == len(self.lengths) - 1:
            for request_id in ranked:
                ops += self._close(request_id)
            self.complete = True
            return ops
        keep = int(len(ranked) / self.divisor)
        promoted = [rid for rid in ranked[:keep] if rid not in self.exited]
        for request_id in ranked:
            if request_id not in promoted:
                ops += self._close(request_id)
        if not promoted:
            self.complete = True
            return ops
        self.rung += 1
        self.members = promoted
        self.results = {}
        self.queue = list(promoted)
        return ops

    def _maybe_shutdown(self) -> list[Operation]:
        if self.shut or not self.complete or any(r not in self.done for r in self.created):
            return []
        self.shut = True
        return [Shutdown()]

    # -- events ---------------------------------------------------------------------------------

    def initial_operations(self) -> list[Operation]:
        return self._advance()

    def trial_created(self, request_id: str) -> list[Operation]:
        return [ValidateAfter(request_id, self.lengths[0])]

    def validation_completed(self, request_id: str, metric: float, length: int) -> list[Operation]:
        if request_id not in self.busy:
            return []
        self.busy.remove(request_id)
        self.results[request_id] = metric
        if self.rung == 0:
            self.source.finish(request_id, Outcome.COMPLETE, metric)
        return self._advance()

    def trial_exited_early(self, request_id: str, reason: ExitedReason) -> list[Operation]:
        if request_id not in self.created or request_id in self.done:
            return []
        self.done.add(request_id)
        in_rung = request_id in self.members and request_id not in self.results
        if request_id in self.busy:
            self.busy.remove(request_id)
        if request_id in self.queue:
            self.queue.remove(request_id)
        if reason is ExitedReason.INVALID_HP and self.rung == 0:
            self.members.remove(request_id)
            self.results.pop(request_id, None)
            self.source.finish(request_id, Outcome.FAIL, None)
            return self._advance()
        self.exited.add(request_id)
        if self.rung == 0 and in_rung:
            outcome = Outcome.PRUNED if reason is ExitedReason.USER_CANCELED else Outcome.FAIL
            self.source.finish(request_id, outcome, None)
        if in_rung:
            self.results[request_id] = WORST_METRIC
        return self._advance()

    def trial_closed(self, request_id: str) -> list[Operation]:
        if request_id not in self.created or request_id in self.done:
            return []
        if request_id not in self.closed:
            return self.trial_exited_early(request_id, ExitedReason.USER_CANCELED)
        self.done.add(request_id)
        return self._advance()

    def progress(self, partial: Mapping[str, float]) -> float:
        if self.complete:
            return len(self.done) / max(len(self.created), 1)
        # Each rung is an equal share; within one, a member that reported counts whole and one
        # training counts what it trained past the rung below of what this rung adds.
        length = self.lengths[self.rung]
        below = self.lengths[self.rung - 1] if self.rung > 0 else 0
        shares = 0.0
        for request_id in self.busy:
            trained = partial.get(request_id, 0.0) * length
            shares += min(max((trained - below) / max(length - below, 1), 0.0), 1.0)
        members = max(len(self.members), self.num_trials if self.rung == 0 else 1)
        within = min((len(self.results) + shares) / members, 1.0)
        return (self.rung + within) / len(self.lengths)

    def snapshot(self) -> dict[str, Any]:
        return {
            "rng": rng_state(self.rng),
            "rung": self.rung,
            "members": list(self.members),
            "results": dict(self.results),
            "queue": list(self.queue),
            "busy": list(self.busy),
            "exited": sorted(self.exited),
            "closed": sorted(self.closed),
            "done": sorted(self.done),
            "created": list(self.created),
            "complete": self.complete,
            "shut": self.shut,
            "source": self.source.snapshot() if self.own_source else None,
        }

    def restore(self, state: dict[str, Any]) -> None:
        set_rng_state(self.rng, state["rng"])
        self.rung = int(state["rung"])
        self.members = list(state["members"])
        self.results = {k: float(v) for k, v in state["results"].items()}
        self.queue = list(state["queue"])
        self.busy = list(state["busy"])
        self.exited = set(state["exited"])
        self.closed = set(state["closed"])
        self.done = set(state["done"])
        self.created = list(state["created"])
        self.complete = bool(state["complete"])
        self.shut = bool(state["shut"])
        if self.own_source:
            self.source.restore(state["source"])


def hyperband(
    space: dict[str, Any],
    *,
    max_length: int,
    rng: random.Random,
    divisor: float = 3.0,
    max_trials: int | None = None,
    max_concurrent: int = 0,
    code_driven: bool = False,
    source: ParamSource | None = None,
    source_checkpoint: str | None = None,
) -> Tournament:
    """Build the ``hyperband`` method (``max_length`` is ``max_time`` when code-driven)."""
    brackets = hyperband_brackets(max_length, divisor, max_trials)
    caps = (
        bracket_max_concurrent(max_concurrent, divisor, [b.trials for b in brackets])
        if max_concurrent > 0
        else [0] * len(brackets)
    )
    methods: list[SearchMethod] = []
    for bracket, cap in zip(brackets, caps, strict=True):
        sub_rng = random.Random(rng.getrandbits(64))
        if code_driven:
            methods.append(
                AsyncHalvingStopping(
                    space,
                    code_driven=True,
                    max_length=max_length,
                    num_rungs=len(bracket.lengths),
                    divisor=divisor,
                    max_trials=bracket.trials,
                    max_concurrent=cap if cap > 0 else bracket.trials,
                    rng=sub_rng,
                    source=source,
                    own_source=source is None,
                    source_checkpoint=source_checkpoint,
                )
            )
        else:
            methods.append(
                SuccessiveHalving(
                    space,
                    lengths=list(bracket.lengths),
                    num_trials=bracket.trials,
                    divisor=divisor,
                    rng=sub_rng,
                    max_concurrent=cap,
                    source=source,
                    own_source=source is None,
                    source_checkpoint=source_checkpoint,
                )
            )
    return Tournament(
        methods, max_concurrent=max_concurrent, code_driven=code_driven, shared_source=source
    )
