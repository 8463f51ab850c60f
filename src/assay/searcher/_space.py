"""Drawing hyperparameter values: random samples and grids, over (possibly nested) spaces."""

from __future__ import annotations

import itertools
import random
from typing import Any

from assay.config import (
    MAX_TRIALS,
    CategoricalHP,
    ConstHP,
    DoubleHP,
    IntHP,
    LogHP,
    flatten,
    grid_points,
    unflatten,
)
from assay.errors import InvalidConfig


def sample(space: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """One random point of ``space``, with the nesting of the space.

    Draws happen in definition order, so the same RNG state gives the same point.
    """
    return unflatten({name: sample_one(hp, rng) for name, hp in flatten(space).items()})


def sample_one(hp: Any, rng: random.Random) -> Any:
    if isinstance(hp, ConstHP):
        return hp.val
    if isinstance(hp, IntHP):
        return rng.randint(hp.minval, hp.maxval)
    if isinstance(hp, DoubleHP):
        return rng.uniform(hp.minval, hp.maxval)
    if isinstance(hp, LogHP):
        return float(hp.base ** rng.uniform(hp.minval, hp.maxval))
    if isinstance(hp, CategoricalHP):
        return hp.vals[rng.randrange(len(hp.vals))]
    raise TypeError(f"not a hyperparameter definition: {hp!r}")


def grid_axis(hp: Any) -> list[Any]:
    """The values a grid search takes for one hyperparameter.

    ``int``: ``count`` evenly spaced integers over ``[minval, maxval]`` (fewer when the range
    holds fewer); ``double``: ``count`` evenly spaced floats including both ends; ``log``:
    ``count`` points evenly spaced in the exponent; ``categorical``: every value.
    """
    if isinstance(hp, ConstHP):
        return [hp.val]
    if isinstance(hp, CategoricalHP):
        return list(hp.vals)
    count = hp.count
    if count is None:
        raise ValueError("grid search is in use but count was not provided")
    if isinstance(hp, IntHP):
        span = hp.maxval - hp.minval
        if count == 1:
            return [hp.minval]
        if count > span:
            return list(range(hp.minval, hp.maxval + 1))
        step = span / (count - 1)
        return sorted({hp.minval + round(i * step) for i in range(count)})
    if isinstance(hp, DoubleHP | LogHP):
        if count == 1:
            points = [hp.minval]
        else:
            step = (hp.maxval - hp.minval) / (count - 1)
            points = [hp.minval + i * step for i in range(count)]
        if isinstance(hp, LogHP):
            return [float(hp.base**p) for p in points]
        return points
    raise TypeError(f"not a hyperparameter definition: {hp!r}")


def grid(space: dict[str, Any]) -> list[dict[str, Any]]:
    """Every point of the grid over ``space`` (the cartesian product of each axis), in a stable
    order: the first hyperparameter varies slowest.

    The points are counted first: a grid past the absolute limit on trials is refused before any
    of it is built. (Submission refuses one past the master's own, lower, limit.)
    """
    points = grid_points(space, stop_after=MAX_TRIALS)
    if points > MAX_TRIALS:
        raise InvalidConfig(
            f"the grid has more than {MAX_TRIALS:,} points, the most an experiment may have",
            [],
        )
    flat = flatten(space)
    names = list(flat)
    axes = [grid_axis(flat[name]) for name in names]
    return [unflatten(dict(zip(names, point, strict=True))) for point in itertools.product(*axes)]
