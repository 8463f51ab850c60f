"""Drawing hyperparameter values: random samples and grids, over (possibly nested) spaces.

Every searcher draws through :func:`draw`, which walks the space in definition order and asks a
*pick* function for each value it needs: random search picks at random, anneal near the best
point so far, evolution from a parent, Optuna from its sampler. A ``choice`` is picked as the
index of an option, and only the chosen option's nested hyperparameters are then drawn. What
was picked comes back as a *genome*: a flat map from each drawn value's path to the value
(``lr``, ``model``: the index of its chosen option, ``model.0.k``: a hyperparameter of option 0),
which searchers keep to draw near a point later.
"""

from __future__ import annotations

import itertools
import math
import random
import sys
from collections.abc import Callable, Iterator
from statistics import NormalDist
from typing import Any

from assay.config import (
    GRID_NORMAL_MESSAGE,
    MAX_TRIALS,
    CategoricalHP,
    ChoiceHP,
    ConstHP,
    DoubleHP,
    IntHP,
    LogHP,
    LognormalHP,
    NormalHP,
    flatten,
    grid_points,
    quantize,
    quantized_count,
    unflatten,
    value_range,
)
from assay.errors import InvalidConfig

MISSING: Any = object()
"""What a pick function returns to have a value drawn at random instead."""

Pick = Callable[[str, Any], Any]
"""``pick(path, definition)``: the value for one hyperparameter (for a ``choice``, the index of
the chosen option), or :data:`MISSING`."""

_STANDARD_NORMAL = NormalDist()


def draw(
    space: dict[str, Any], rng: random.Random | None, pick: Pick | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One point of ``space`` (with the nesting of the space) and its genome.

    Values ``pick`` leaves :data:`MISSING` are drawn at random from ``rng`` (which may be None
    only when ``pick`` always answers). Draws happen in definition order, depth first into a
    chosen option, so the same RNG state gives the same point.
    """
    genome: dict[str, Any] = {}
    return _draw(space, "", rng, pick, genome), genome


def _draw(
    space: dict[str, Any],
    prefix: str,
    rng: random.Random | None,
    pick: Pick | None,
    genome: dict[str, Any],
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, hp in space.items():
        key = f"{prefix}{name}"
        if isinstance(hp, dict):
            nested = _draw(hp, f"{key}.", rng, pick, genome)
            if nested:  # as flatten/unflatten: an empty nested map has no values
                out[name] = nested
            continue
        if isinstance(hp, ConstHP):
            out[name] = hp.val
            continue
        value = MISSING if pick is None else pick(key, hp)
        if isinstance(hp, ChoiceHP):
            if not (isinstance(value, int) and 0 <= value < len(hp.options)):
                value = _rng(rng).randrange(len(hp.options))
            genome[key] = value
            option = hp.options[value]
            if isinstance(option, dict):
                out[name] = _draw(option, f"{key}.{value}.", rng, pick, genome)
            else:
                out[name] = option
            continue
        if value is MISSING:
            value = sample_one(hp, _rng(rng))
        genome[key] = value
        out[name] = value
    return out


def _rng(rng: random.Random | None) -> random.Random:
    if rng is None:
        raise ValueError("a value was left to chance, but no random source was given")
    return rng


def sample(space: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """One random point of ``space``, with the nesting of the space."""
    return draw(space, rng)[0]


def sample_one(hp: Any, rng: random.Random) -> Any:
    """A random value of one (flattened) hyperparameter; a ``choice`` gives its chosen option
    with that option's nested hyperparameters drawn."""
    if isinstance(hp, ConstHP):
        return hp.val
    if isinstance(hp, IntHP):
        return rng.randint(hp.minval, hp.maxval)
    if isinstance(hp, DoubleHP):
        value = rng.uniform(hp.minval, hp.maxval)
        return value if hp.q is None else quantize(value, hp.q, hp.minval, hp.maxval)
    if isinstance(hp, LogHP):
        return log_value(hp, rng.uniform(hp.minval, hp.maxval))
    if isinstance(hp, CategoricalHP):
        return hp.vals[rng.randrange(len(hp.vals))]
    if isinstance(hp, NormalHP | LognormalHP):
        return normal_value(hp, rng.normalvariate(hp.mu, hp.sigma))
    if isinstance(hp, ChoiceHP):
        return draw({"_": hp}, rng)[0]["_"]
    raise TypeError(f"not a hyperparameter definition: {hp!r}")


def log_value(hp: LogHP, exponent: float) -> float:
    """The value of a ``log`` at ``exponent``: ``base ** exponent``, quantized by ``q``."""
    value = float(hp.base**exponent)
    if hp.q is None:
        return value
    low, high = value_range(hp)
    return quantize(value, hp.q, low, high)


def normal_value(hp: NormalHP | LognormalHP, x: float) -> float:
    """The value of a ``normal`` (``x``) or ``lognormal`` (``exp(x)``) drawn as ``x`` from
    ``N(mu, sigma)``, quantized by ``q``."""
    value = safe_exp(x) if isinstance(hp, LognormalHP) else x
    return value if hp.q is None else quantize(value, hp.q)


def normal_from_unit(hp: NormalHP | LognormalHP, u: float) -> float:
    """The value of a ``normal``/``lognormal`` at quantile ``u`` of ``N(mu, sigma)`` (how
    model-based samplers that search the unit interval draw it)."""
    u = min(max(u, 1e-12), 1 - 1e-12)
    return normal_value(hp, hp.mu + hp.sigma * _STANDARD_NORMAL.inv_cdf(u))


def safe_exp(x: float) -> float:
    """``exp(x)``, the largest float where that overflows (values stay JSON)."""
    try:
        return math.exp(x)
    except OverflowError:
        return sys.float_info.max


def grid_axis(hp: Any) -> list[Any]:
    """The values a grid search takes for one hyperparameter.

    ``int``: ``count`` evenly spaced integers over ``[minval, maxval]`` (fewer when the range
    holds fewer); ``double``: ``count`` evenly spaced floats including both ends; ``log``:
    ``count`` points evenly spaced in the exponent; with ``q``, a ``double`` or ``log`` takes
    every quantized value of its range (or ``count`` of them, evenly spread); ``categorical``:
    every value; ``choice``: each constant option, and every point of each map option's grid.
    """
    if isinstance(hp, ConstHP):
        return [hp.val]
    if isinstance(hp, CategoricalHP):
        return list(hp.vals)
    if isinstance(hp, ChoiceHP):
        values: list[Any] = []
        for option in hp.options:
            values.extend(grid(option) if isinstance(option, dict) else [option])
        return values
    if isinstance(hp, NormalHP | LognormalHP):
        raise ValueError(f"grid search cannot enumerate a {hp.type} distribution")
    if isinstance(hp, DoubleHP | LogHP) and hp.q is not None:
        low, high = value_range(hp)
        size = quantized_count(low, high, hp.q)
        try:
            first = round(low / hp.q)
        except (OverflowError, ValueError):
            # A q too fine to count its multiples in floats (the grid was refused unless it has
            # ``count``): ``count`` evenly spaced values, which quantization leaves as they are.
            first = None
        if first is not None:
            return [min(max(float((first + i) * hp.q), low), high) for i in _spread(size, hp.count)]
    count = hp.count
    if count is None:
        raise ValueError("grid search is in use but count was not provided")
    if isinstance(hp, IntHP):
        return [hp.minval + i for i in _spread(hp.maxval - hp.minval + 1, count)]
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


def _spread(size: int, count: int | None) -> list[int]:
    # ``count`` indices of ``range(size)`` evenly spread, both ends included (all of them when
    # count is None or covers them); with a step of at least 1 the rounded indices stay distinct.
    if count is None or count >= size:
        return list(range(size))
    if count == 1:
        return [0]
    step = (size - 1) / (count - 1)
    return [round(i * step) for i in range(count)]


def grid(space: dict[str, Any]) -> list[dict[str, Any]]:
    """Every point of the grid over ``space`` (the cartesian product of each axis), in a stable
    order: the first hyperparameter varies slowest.

    The points are counted first: a grid past the absolute limit on trials is refused before any
    of it is built. (Submission refuses one past the master's own, lower, limit.)
    """
    flat = flatten(space)
    for name, hp in _every_leaf(space):
        if isinstance(hp, NormalHP | LognormalHP):
            raise InvalidConfig(
                f"hyperparameters.{name}: {GRID_NORMAL_MESSAGE.format(kind=hp.type)}",
                [],
            )
    points = grid_points(space, stop_after=MAX_TRIALS)
    if points > MAX_TRIALS:
        raise InvalidConfig(
            f"the grid has more than {MAX_TRIALS:,} points, the most an experiment may have",
            [],
        )
    names = list(flat)
    axes = [grid_axis(flat[name]) for name in names]
    return [unflatten(dict(zip(names, point, strict=True))) for point in itertools.product(*axes)]


def _every_leaf(space: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    # Paths of the config (``a.options[1].k``), for messages.
    for name, hp in space.items():
        key = f"{prefix}{name}"
        if isinstance(hp, dict):
            yield from _every_leaf(hp, f"{key}.")
            continue
        yield key, hp
        if isinstance(hp, ChoiceHP):
            for i, option in enumerate(hp.options):
                if isinstance(option, dict):
                    yield from _every_leaf(option, f"{key}.options[{i}].")


def leaves(space: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any, bool]]:
    """Every hyperparameter that may be drawn, by genome path (see the module docstring), with
    whether it is drawn only when an enclosing ``choice`` picks its option. Constants are not
    listed: they are never drawn."""
    yield from _leaves(space, prefix, False)


def _leaves(
    space: dict[str, Any], prefix: str, conditional: bool
) -> Iterator[tuple[str, Any, bool]]:
    for name, hp in space.items():
        key = f"{prefix}{name}"
        if isinstance(hp, dict):
            yield from _leaves(hp, f"{key}.", conditional)
        elif not isinstance(hp, ConstHP):
            yield key, hp, conditional
            if isinstance(hp, ChoiceHP):
                for i, option in enumerate(hp.options):
                    if isinstance(option, dict):
                        yield from _leaves(option, f"{key}.{i}.", True)
