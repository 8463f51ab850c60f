"""``pbt``: population-based training (Jaderberg et al. 2017), as Determined runs it.

``population_size`` trials train ``length_per_round`` units at a time. When every member has
reported for the round, the bottom ``truncate_fraction`` are closed and replaced by copies of
the top ``truncate_fraction``: each copy starts from its parent's latest checkpoint
(``checkpoint = parent_checkpoint(parent)``) with *explored* hyperparameters; the other members
train one more round. After ``num_rounds`` rounds every member is closed.

Explore, per hyperparameter: with probability ``resample_probability`` draw it afresh;
otherwise multiply it by ``1 - perturb_factor`` or ``1 + perturb_factor`` (a coin flip) and
clip to its range (ints round down when shrinking and up when growing, so they move);
categorical, ``choice`` and constant values are kept unless resampled; ``q`` quantizes the
perturbed value again; ``normal`` and ``lognormal`` values are not clipped (they have no range).

A member's lengths count its own training: a copy made after round ``k`` validates at
``length_per_round``, ``2 * length_per_round``... of its own (see :class:`Create`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import Any

from assay.config import (
    CategoricalHP,
    ChoiceHP,
    ConstHP,
    DoubleHP,
    IntHP,
    LogHP,
    LognormalHP,
    NormalHP,
    flatten,
    quantize,
    unflatten,
    value_range,
)
from assay.protocol import ExitedReason
from assay.searcher._base import (
    WORST_METRIC,
    new_request_id,
    new_trial_seed,
    rng_state,
    set_rng_state,
)
from assay.searcher._ops import (
    Close,
    Create,
    Operation,
    Shutdown,
    ValidateAfter,
    parent_checkpoint,
)
from assay.searcher._space import sample, sample_one


def explore(
    space: dict[str, Any],
    hparams: dict[str, Any],
    rng: random.Random,
    *,
    resample_probability: float,
    perturb_factor: float,
) -> dict[str, Any]:
    """Hyperparameters "near" ``hparams`` (see the module docstring). Pure given ``rng``."""
    new: dict[str, Any] = {}
    for name, hp in flatten(space).items():
        if rng.random() < resample_probability:
            new[name] = sample_one(hp, rng)
            continue
        known, value = _lookup(hparams, name)
        if not known:
            new[name] = sample_one(hp, rng)
            continue
        if isinstance(hp, ConstHP | CategoricalHP | ChoiceHP):
            new[name] = value
            continue
        shrink = rng.random() < 0.5
        factor = 1 - perturb_factor if shrink else 1 + perturb_factor
        if isinstance(hp, IntHP):
            moved = math.floor(value * factor) if shrink else math.ceil(value * factor)
            new[name] = min(max(int(moved), hp.minval), hp.maxval)
        elif isinstance(hp, DoubleHP | LogHP):
            low, high = value_range(hp)
            moved = min(max(float(value) * factor, low), high)
            new[name] = moved if hp.q is None else quantize(moved, hp.q, low, high)
        elif isinstance(hp, NormalHP | LognormalHP):
            moved = float(value) * factor
            new[name] = moved if hp.q is None else quantize(moved, hp.q)
        else:
            new[name] = value
    return unflatten(new)


def _lookup(hparams: dict[str, Any], name: str) -> tuple[bool, Any]:
    node: Any = hparams
    for part in name.split("."):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


class PBT:
    """Population-based training (see the module docstring)."""

    def __init__(
        self,
        space: dict[str, Any],
        *,
        population_size: int,
        num_rounds: int,
        length_per_round: int,
        truncate_fraction: float,
        resample_probability: float,
        perturb_factor: float,
        rng: random.Random,
        source_checkpoint: str | None = None,
    ) -> None:
        if population_size < 1 or num_rounds < 1 or length_per_round < 1:
            raise ValueError("population_size, num_rounds and length_per_round must be >= 1")
        if not 0 <= truncate_fraction <= 0.5:
            raise ValueError(f"truncate_fraction must be in [0, 0.5], got {truncate_fraction}")
        self.space = space
        self.population_size = population_size
        self.num_rounds = num_rounds
        self.length_per_round = length_per_round
        self.truncate_fraction = truncate_fraction
        self.resample_probability = resample_probability
        self.perturb_factor = perturb_factor
        self.rng = rng
        self.source_checkpoint = source_checkpoint
        self.round = 0
        self.members: list[str] = []
        self.hparams: dict[str, dict[str, Any]] = {}
        self.rounds_trained: dict[str, int] = {}
        self.inherited: dict[str, int] = {}
        self.results: dict[str, float] = {}
        self.exited: set[str] = set()
        self.closed: set[str] = set()
        self.done: set[str] = set()
        self.complete = False
        self.shut = False

    def _new_trial(
        self, hparams: dict[str, Any], checkpoint: str | None, parent: str | None = None
    ) -> Create:
        request_id = new_request_id(self.rng)
        self.hparams[request_id] = hparams
        # A copy resumes from its parent's checkpoint, which holds the parent's progress;
        # lengths are absolute, so the copy's next length continues from there.
        self.rounds_trained[request_id] = 0
        if parent is not None:
            self.inherited[request_id] = self.inherited.get(parent, 0) + self.rounds_trained[parent]
        self.members.append(request_id)
        return Create(request_id, hparams, new_trial_seed(self.rng), checkpoint=checkpoint)

    def _next_length(self, request_id: str) -> int:
        rounds = self.inherited.get(request_id, 0) + self.rounds_trained[request_id]
        return (rounds + 1) * self.length_per_round

    def _close(self, request_id: str) -> list[Operation]:
        if request_id in self.closed or request_id in self.exited:
            return []
        self.closed.add(request_id)
        return [Close(request_id)]

    def initial_operations(self) -> list[Operation]:
        return [
            self._new_trial(sample(self.space, self.rng), self.source_checkpoint)
            for _ in range(self.population_size)
        ]

    def trial_created(self, request_id: str) -> list[Operation]:
        return [ValidateAfter(request_id, self._next_length(request_id))]

    def stage_of(self, request_id: str) -> str | None:
        # Every member trains the current round; one that reported waits for the others.
        if request_id not in self.members:
            return None
        return f"round {min(self.round + 1, self.num_rounds)} of {self.num_rounds}"

    def validation_completed(self, request_id: str, metric: float, length: int) -> list[Operation]:
        if request_id not in self.members or request_id in self.results:
            return []
        self.results[request_id] = metric
        self.rounds_trained[request_id] += 1
        return self._maybe_end_round()

    def _maybe_end_round(self) -> list[Operation]:
        if self.complete or any(rid not in self.results for rid in self.members):
            return self._maybe_shutdown()
        self.round += 1
        order = {rid: i for i, rid in enumerate(self.members)}
        ranked = sorted(self.members, key=lambda rid: (self.results[rid], order[rid]))
        ops: list[Operation] = []
        if self.round >= self.num_rounds or not ranked:
            for request_id in ranked:
                ops += self._close(request_id)
            self.complete = True
            return ops + self._maybe_shutdown()
        cut = int(self.truncate_fraction * len(ranked))
        survivors = [rid for rid in ranked if rid not in self.exited]
        losers = set(ranked[len(ranked) - cut :]) if cut else set()
        parents = [rid for rid in ranked[:cut] if rid not in self.exited]
        self.members = [rid for rid in survivors if rid not in losers]
        self.results = {}
        for request_id in losers:
            ops += self._close(request_id)
        children: list[Operation] = []
        for parent in parents:
            hparams = explore(
                self.space,
                self.hparams[parent],
                self.rng,
                resample_probability=self.resample_probability,
                perturb_factor=self.perturb_factor,
            )
            children.append(self._new_trial(hparams, parent_checkpoint(parent), parent))
        for request_id in self.members:
            if request_id in self.rounds_trained and self.rounds_trained[request_id] > 0:
                ops.append(ValidateAfter(request_id, self._next_length(request_id)))
        if not self.members:
            self.complete = True
        return ops + children + self._maybe_shutdown()

    def _maybe_shutdown(self) -> list[Operation]:
        if self.shut or not self.complete or any(r not in self.done for r in self.hparams):
            return []
        self.shut = True
        return [Shutdown()]

    def trial_exited_early(self, request_id: str, reason: ExitedReason) -> list[Operation]:
        if request_id not in self.hparams or request_id in self.done:
            return []
        self.done.add(request_id)
        if request_id not in self.members or self.complete:
            return self._maybe_shutdown()
        if reason is ExitedReason.INVALID_HP and self.rounds_trained[request_id] == 0:
            # Replace it with a fresh draw, in the same round; it does not count.
            self.members.remove(request_id)
            replacement = self._new_trial(sample(self.space, self.rng), self.source_checkpoint)
            return [replacement, *self._maybe_end_round()]
        self.exited.add(request_id)
        self.results.setdefault(request_id, WORST_METRIC)
        return self._maybe_end_round()

    def trial_closed(self, request_id: str) -> list[Operation]:
        if request_id not in self.hparams or request_id in self.done:
            return []
        if request_id not in self.closed:
            return self.trial_exited_early(request_id, ExitedReason.USER_CANCELED)
        self.done.add(request_id)
        return self._maybe_shutdown()

    def progress(self, partial: Mapping[str, float]) -> float:
        if self.complete:
            return 1.0
        # A member training this round counts what it trained of the round (its operation's
        # length is absolute, the round its last length_per_round units).
        training = 0.0
        for request_id in self.members:
            if request_id in self.results or request_id in self.done:
                continue
            length = self._next_length(request_id)
            trained = partial.get(request_id, 0.0) * length - (length - self.length_per_round)
            training += min(max(trained / self.length_per_round, 0.0), 1.0)
        reported = (len(self.results) + training) / max(len(self.members), 1)
        return min(1.0, (self.round + reported) / self.num_rounds)

    def snapshot(self) -> dict[str, Any]:
        return {
            "rng": rng_state(self.rng),
            "round": self.round,
            "members": list(self.members),
            "hparams": dict(self.hparams),
            "rounds_trained": dict(self.rounds_trained),
            "inherited": dict(self.inherited),
            "results": dict(self.results),
            "exited": sorted(self.exited),
            "closed": sorted(self.closed),
            "done": sorted(self.done),
            "complete": self.complete,
            "shut": self.shut,
        }

    def restore(self, state: dict[str, Any]) -> None:
        set_rng_state(self.rng, state["rng"])
        self.round = int(state["round"])
        self.members = list(state["members"])
        self.hparams = {k: dict(v) for k, v in state["hparams"].items()}
        self.rounds_trained = {k: int(v) for k, v in state["rounds_trained"].items()}
        self.inherited = {k: int(v) for k, v in state.get("inherited", {}).items()}
        self.results = {k: float(v) for k, v in state["results"].items()}
        self.exited = set(state["exited"])
        self.closed = set(state["closed"])
        self.done = set(state["done"])
        self.complete = bool(state["complete"])
        self.shut = bool(state["shut"])
