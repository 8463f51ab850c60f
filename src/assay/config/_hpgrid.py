"""Quantization and grids over hyperparameters: what ``q`` does, how many points a grid search
has (counted without building any), and which definitions a grid cannot enumerate.

``assay.searcher`` builds the grids; the counts here are the lengths of its lists, so the
submission checks and the searcher agree on the size of every search.
"""

from __future__ import annotations

import math
from typing import Any

from assay.config._hparams import (
    CategoricalHP,
    ChoiceHP,
    DoubleHP,
    IntHP,
    LogHP,
    flatten,
)
from assay.errors import ErrorDetail

GRID_COUNT_MESSAGE = "grid search is in use but count was not provided"
GRID_NORMAL_MESSAGE = (
    "grid search cannot enumerate a {kind} distribution (it has no bounds); use a double or "
    "log with count or q, or a categorical, or another searcher"
)

_HUGE = 10**40
"""The count given to a quantized range whose points cannot be counted in floats: more than any
limit on trials."""


def quantize(value: float, q: float, low: float | None = None, high: float | None = None) -> float:
    """NNI's quantization: ``round(value / q) * q``, clipped to ``[low, high]`` when given.

    Rounding is half to even, as NumPy's (and so NNI's) is. A value whose quotient is not a
    finite number is returned as it is.
    """
    ratio = value / q
    if not math.isfinite(ratio):
        return value
    out = round(ratio) * q
    if not math.isfinite(out):
        return value
    if low is not None:
        out = max(out, low)
    if high is not None:
        out = min(out, high)
    return float(out)


def value_range(hp: DoubleHP | LogHP) -> tuple[float, float]:
    """The smallest and largest value of a ``double`` or ``log`` (for ``log``, the powers)."""
    if isinstance(hp, LogHP):
        ends = sorted((float(hp.base**hp.minval), float(hp.base**hp.maxval)))
        return ends[0], ends[1]
    return float(hp.minval), float(hp.maxval)


def quantized_count(low: float, high: float, q: float) -> int:
    """How many distinct values ``quantize(x, q, low, high)`` takes for ``x`` in
    ``[low, high]``: one per multiple of ``q`` from ``round(low / q)`` to ``round(high / q)``."""
    if low >= high:
        return 1
    try:
        first, last = round(low / q), round(high / q)
    except (OverflowError, ValueError):
        return _HUGE
    return max(1, min(_HUGE, last - first + 1))


def count_hyperparameters(hps: dict[str, Any]) -> int:
    """How many definitions ``hps`` holds: each flattened one, and those inside the map options
    of every ``choice`` (which searchers model as parameters of their own)."""
    total = 0
    for hp in flatten(hps).values():
        total += 1
        if isinstance(hp, ChoiceHP):
            total += sum(count_hyperparameters(o) for o in hp.options if isinstance(o, dict))
    return total


def grid_points(hps: dict[str, Any], stop_after: int | None = None) -> int:
    """How many points a grid search over the validated ``hps`` has, counted without building
    any: the product of each hyperparameter's number of values (see ``assay.searcher``'s
    ``grid_axis``, whose lists have these lengths). Past ``stop_after`` the count stops growing
    and that bound plus one is returned, so any input is counted at once.
    """
    total = 1
    for hp in flatten(hps).values():
        total *= axis_size(hp, stop_after)
        if total == 0:
            return 0
        if stop_after is not None and total > stop_after:
            return stop_after + 1
    return total


def axis_size(hp: Any, stop_after: int | None = None) -> int:
    """How many values a grid takes for one (flattened) hyperparameter."""
    if isinstance(hp, CategoricalHP):
        return len(hp.vals)
    if isinstance(hp, ChoiceHP):
        total = 0
        for option in hp.options:
            total += grid_points(option, stop_after) if isinstance(option, dict) else 1
            if stop_after is not None and total > stop_after:
                return stop_after + 1
        return total
    if isinstance(hp, DoubleHP | LogHP) and hp.q is not None:
        support = quantized_count(*value_range(hp), hp.q)
        return support if hp.count is None else min(hp.count, support)
    if isinstance(hp, IntHP | DoubleHP | LogHP) and hp.count is not None:
        if isinstance(hp, IntHP):
            # Evenly spaced integers stay distinct while the step is over 1; past that, the
            # whole range.
            return min(hp.count, hp.maxval - hp.minval + 1)
        return hp.count
    return 1  # a constant; a range without count is reported by the grid checks


def grid_problems(hps: dict[str, Any], path: str = "") -> list[ErrorDetail]:
    """Every hyperparameter under ``hps`` (JSON form) that a grid cannot enumerate: an
    int/double/log without ``count`` (a ``double`` or ``log`` with ``q`` needs none: its
    quantized values are the grid), and any ``normal`` or ``lognormal``.

    Nested maps and the map options of a ``choice`` are searched (``a.options[1].k``), and so
    are the elements of list constants (implicit, or explicit ``{type: const, val: [...]}``) that
    look like hyperparameter maps, as Determined's schema does; their paths carry the index
    (``hyperparameters.list_hparam[2]``).
    """
    problems: list[ErrorDetail] = []
    for name, node in hps.items():
        _grid(node, f"{path}.{name}" if path else str(name), problems)
    return problems


def _grid(node: Any, path: str, out: list[ErrorDetail]) -> None:
    if isinstance(node, list):
        for i, item in enumerate(node):
            _grid(item, f"{path}[{i}]", out)
    elif isinstance(node, dict):
        kind = node.get("type")
        if "type" not in node:
            for name, child in node.items():
                _grid(child, f"{path}.{name}", out)
        elif kind in ("normal", "lognormal"):
            out.append(ErrorDetail(path, GRID_NORMAL_MESSAGE.format(kind=kind)))
        elif kind == "choice" and isinstance(node.get("options"), list):
            for i, option in enumerate(node["options"]):
                if isinstance(option, dict):
                    for name, child in option.items():
                        _grid(child, f"{path}.options[{i}].{name}", out)
        elif kind in ("int", "double", "log") and node.get("count") is None:
            if kind == "int" or node.get("q") is None:
                out.append(ErrorDetail(path, GRID_COUNT_MESSAGE))
        elif kind == "const" and isinstance(node.get("val"), list):
            _grid(node["val"], path, out)
