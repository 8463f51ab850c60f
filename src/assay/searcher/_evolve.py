"""NNI's Anneal and Evolution tuners, as sources of hyperparameters for a pool search.

Both learn only from results: a trial that ends with a metric (complete, or stopped early with
the metric it had) joins what they know; one without a metric teaches nothing. Both draw with the
owning method's RNG, so they hold nothing random of their own to snapshot.

**Anneal** (after hyperopt's, which NNI's wraps): the first draw is random; later ones pick one
of the best points so far (the best most often: its rank is drawn from a geometric distribution
with mean ``AVG_BEST_RANK``) and draw each hyperparameter around that point's value with a
spread of ``1 / (1 + results * SHRINK)`` of its range, so the search narrows as results come in.
A categorical or ``choice`` keeps the point's value with probability ``1 - spread``, else is
drawn afresh; a ``normal`` is drawn from ``N(value, sigma * spread)``.

**Evolution** (NNI's): the first ``population_size`` trials are random. After that each new
trial takes two members of the population at random, copies the better one and draws one of
its hyperparameters afresh (for a ``choice``, the option, and with it the option's nested
values); the worse member leaves the population. Finished trials join the population.
"""

from __future__ import annotations

import math
import random
from typing import Any

from assay.config import (
    CategoricalHP,
    ChoiceHP,
    DoubleHP,
    IntHP,
    LogHP,
    LognormalHP,
    NormalHP,
    quantize,
)
from assay.searcher._source import Outcome
from assay.searcher._space import MISSING, draw, log_value, normal_value

AVG_BEST_RANK = 2.0
SHRINK = 0.1

Result = tuple[dict[str, Any], float]
"""A finished point: its genome (see ``_space``) and its metric, smaller is better."""


def _results_to_json(results: list[Result]) -> list[list[Any]]:
    return [[genome, metric] for genome, metric in results]


def _results_from_json(raw: list[list[Any]]) -> list[Result]:
    return [(dict(genome), float(metric)) for genome, metric in raw]


class _Learning:
    """What both sources share: the genomes of running trials and how they ended."""

    def __init__(self, space: dict[str, Any], rng: random.Random) -> None:
        self.space = space
        self.rng = rng
        self.running: dict[str, dict[str, Any]] = {}

    def _record(self, request_id: str, genome: dict[str, Any]) -> None:
        self.running[request_id] = genome

    def _ended(self, request_id: str, outcome: Outcome, metric: float | None) -> Result | None:
        genome = self.running.pop(request_id, None)
        if genome is None or metric is None or outcome is Outcome.FAIL:
            return None
        return genome, float(metric)


class AnnealSource(_Learning):
    """NNI's Anneal tuner (see the module docstring)."""

    def __init__(self, space: dict[str, Any], rng: random.Random) -> None:
        super().__init__(space, rng)
        self.results: list[Result] = []

    def suggest(self, request_id: str) -> dict[str, Any]:
        if not self.results:
            values, genome = draw(self.space, self.rng)
        else:
            ranked = sorted(self.results, key=lambda r: r[1])
            rank = min(int(self.rng.expovariate(1 / AVG_BEST_RANK)), len(ranked) - 1)
            center = ranked[rank][0]
            spread = 1.0 / (1.0 + len(self.results) * SHRINK)

            def pick(path: str, hp: Any) -> Any:
                if path not in center:
                    return MISSING
                return _near(hp, center[path], spread, self.rng)

            values, genome = draw(self.space, self.rng, pick)
        self._record(request_id, genome)
        return values

    def finish(self, request_id: str, outcome: Outcome, metric: float | None) -> None:
        result = self._ended(request_id, outcome, metric)
        if result is not None:
            self.results.append(result)

    def snapshot(self) -> dict[str, Any]:
        return {"running": dict(self.running), "results": _results_to_json(self.results)}

    def restore(self, state: dict[str, Any]) -> None:
        self.running = {k: dict(v) for k, v in state["running"].items()}
        self.results = _results_from_json(state["results"])


def _near(hp: Any, value: Any, spread: float, rng: random.Random) -> Any:
    """A value of ``hp`` around ``value``, ``spread`` (0..1] of the range away at most."""
    if isinstance(hp, CategoricalHP | ChoiceHP):
        return MISSING if rng.random() < spread else value
    if isinstance(hp, IntHP):
        half = (hp.maxval - hp.minval + 1) * spread / 2
        step = round(rng.uniform(value - half, value + half))
        return min(max(int(step), hp.minval), hp.maxval)
    if isinstance(hp, DoubleHP):
        half = (hp.maxval - hp.minval) * spread / 2
        moved = min(max(rng.uniform(value - half, value + half), hp.minval), hp.maxval)
        return moved if hp.q is None else quantize(moved, hp.q, hp.minval, hp.maxval)
    if isinstance(hp, LogHP):
        if hp.base == 1 or value <= 0:
            return MISSING
        low, high = sorted((hp.minval, hp.maxval))
        exponent = math.log(value) / math.log(hp.base)
        half = (high - low) * spread / 2
        return log_value(hp, min(max(rng.uniform(exponent - half, exponent + half), low), high))
    if isinstance(hp, NormalHP):
        return normal_value(hp, rng.normalvariate(value, hp.sigma * spread))
    if isinstance(hp, LognormalHP):
        if value <= 0:
            return MISSING
        return normal_value(hp, rng.normalvariate(math.log(value), hp.sigma * spread))
    return MISSING


class EvolutionSource(_Learning):
    """NNI's Evolution tuner (see the module docstring)."""

    def __init__(self, space: dict[str, Any], rng: random.Random, *, population_size: int) -> None:
        super().__init__(space, rng)
        self.population_size = population_size
        self.population: list[Result] = []
        self.suggested = 0

    def suggest(self, request_id: str) -> dict[str, Any]:
        self.suggested += 1
        if self.suggested <= self.population_size or not self.population:
            values, genome = draw(self.space, self.rng)
            self._record(request_id, genome)
            return values
        better = self.rng.randrange(len(self.population))
        worse = self.rng.randrange(len(self.population))
        if self.population[worse][1] < self.population[better][1]:
            better, worse = worse, better
        parent = self.population[better][0]
        mutated = self.rng.choice(sorted(parent)) if parent else None
        if worse != better:
            del self.population[worse]

        def pick(path: str, hp: Any) -> Any:
            if path == mutated:
                return MISSING
            return parent.get(path, MISSING)

        values, genome = draw(self.space, self.rng, pick)
        self._record(request_id, genome)
        return values

    def finish(self, request_id: str, outcome: Outcome, metric: float | None) -> None:
        result = self._ended(request_id, outcome, metric)
        if result is not None:
            self.population.append(result)

    def snapshot(self) -> dict[str, Any]:
        return {
            "running": dict(self.running),
            "population": _results_to_json(self.population),
            "suggested": self.suggested,
        }

    def restore(self, state: dict[str, Any]) -> None:
        self.running = {k: dict(v) for k, v in state["running"].items()}
        self.population = _results_from_json(state["population"])
        self.suggested = int(state["suggested"])
