"""NNI search spaces (``{"name": {"_type": T, "_value": [...]}}``) as assay hyperparameters,
with NNI's semantics kept exactly: ``randint`` excludes its upper end, the ``q`` types round to a
multiple of ``q`` and clip to the range, and a ``choice`` option that is a map is a nested space
whose ``_name`` the trial receives as it is."""

from __future__ import annotations

import math
from typing import Any

from assay.config._base import show
from assay.errors import ErrorDetail

NNI_TYPES = (
    "choice",
    "randint",
    "uniform",
    "quniform",
    "loguniform",
    "qloguniform",
    "normal",
    "qnormal",
    "lognormal",
    "qlognormal",
)
_ARITY = {
    "randint": 2,
    "uniform": 2,
    "quniform": 3,
    "loguniform": 2,
    "qloguniform": 3,
    "normal": 2,
    "qnormal": 3,
    "lognormal": 2,
    "qlognormal": 3,
}
_UNSUPPORTED = {
    "mutable_layer": "NNI's classic NAS mutable layers are not supported: write the choices as "
    "a choice hyperparameter",
    "layer_choice": "NNI's classic NAS layer choices are not supported: write them as a choice "
    "hyperparameter",
    "input_choice": "NNI's classic NAS input choices are not supported: write them as a choice "
    "hyperparameter",
}


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def convert_space(
    space: Any, where: str, *, grid: bool = False
) -> tuple[dict[str, Any], list[ErrorDetail]]:
    """The assay ``hyperparameters`` of an NNI search space, and every problem found.

    With ``grid`` (NNI's GridSearch tuner), each type is written so that assay's grid takes
    exactly the values GridSearch does: every integer of a ``randint``, every multiple of ``q``
    of a ``quniform`` or ``qloguniform`` range (clipped to it).
    """
    if not isinstance(space, dict):
        return {}, [
            ErrorDetail(where, f"must be a map of names to {{_type, _value}}, got {show(space)}")
        ]
    out: dict[str, Any] = {}
    problems: list[ErrorDetail] = []
    for name, spec in space.items():
        hp = _convert(spec, f"{where}.{name}", problems, grid)
        if hp is not None:
            out[str(name)] = hp
    return out, problems


def _convert(spec: Any, where: str, problems: list[ErrorDetail], grid: bool) -> Any:
    if not isinstance(spec, dict) or "_type" not in spec:
        problems.append(
            ErrorDetail(where, f"must be a map with _type and _value, got {show(spec)}")
        )
        return None
    kind, value = spec.get("_type"), spec.get("_value")
    if kind in _UNSUPPORTED:
        problems.append(ErrorDetail(f"{where}._type", _UNSUPPORTED[str(kind)]))
        return None
    if kind not in NNI_TYPES:
        problems.append(
            ErrorDetail(
                f"{where}._type",
                f"unknown NNI type {show(kind)}; expected one of: {', '.join(NNI_TYPES)}",
            )
        )
        return None
    if not isinstance(value, list) or not value:
        problems.append(
            ErrorDetail(f"{where}._value", f"must be a non-empty list, got {show(value)}")
        )
        return None
    if kind == "choice":
        return _choice(value, where, problems, grid)
    arity = _ARITY[str(kind)]
    if len(value) != arity or not all(_number(v) for v in value):
        shape = "[low, high]" if arity == 2 else "[low, high, q]"
        if str(kind).endswith("normal"):
            shape = "[mu, sigma]" if arity == 2 else "[mu, sigma, q]"
        problems.append(
            ErrorDetail(
                f"{where}._value", f"{kind} needs {arity} numbers {shape}, got {show(value)}"
            )
        )
        return None
    hp = _numeric(str(kind), [float(v) for v in value], value, where, problems)
    return _exact_grid(str(kind), value, hp) if grid and hp is not None else hp


_GRID_VALUES_MAX = 10_000
"""The most values of a ``qloguniform`` written out for GridSearch (each is in the config the
master stores); past it, the range is kept, its ends as exact as floats allow."""


def _exact_grid(kind: str, raw: list[Any], hp: dict[str, Any]) -> dict[str, Any]:
    if kind == "randint":
        # Every integer of [low, high): NNI's GridSearch takes them all.
        return {**hp, "count": int(hp["maxval"]) - int(hp["minval"]) + 1}
    if kind == "qloguniform":
        # The ends of assay's log range are e ** log(low), which float rounding can move off
        # low itself (999.9999999999994 for 1000): the values, written out, are NNI's exactly.
        low, high, q = float(raw[0]), float(raw[1]), float(raw[2])
        first, last = round(low / q), round(high / q)
        if last - first + 1 <= _GRID_VALUES_MAX:
            values: list[float] = []
            for k in range(first, last + 1):
                value = min(max(float(k * q), low), high)
                if value not in values:
                    values.append(value)
            return {"type": "categorical", "vals": values}
    return hp  # quniform: assay's grid takes every multiple of q of [low, high] already


def _numeric(
    kind: str, v: list[float], raw: list[Any], where: str, problems: list[ErrorDetail]
) -> Any:
    path = f"{where}._value"
    if kind == "randint":
        low, high = raw
        if not (float(low).is_integer() and float(high).is_integer()) or high <= low:
            problems.append(
                ErrorDetail(path, f"randint needs integers [low, high) with high > low, got {raw}")
            )
            return None
        # NNI's randint excludes its upper end; assay's int includes both.
        return {"type": "int", "minval": int(low), "maxval": int(high) - 1}
    if kind.endswith("normal"):
        mu, sigma = v[0], v[1]
        if sigma <= 0:
            problems.append(ErrorDetail(path, f"sigma must be > 0, got {raw[1]}"))
            return None
        hp: dict[str, Any] = {"type": "lognormal" if "lognormal" in kind else "normal"}
        hp.update(mu=mu, sigma=sigma)
        if kind.startswith("q"):
            if v[2] <= 0:
                problems.append(ErrorDetail(path, f"q must be > 0, got {raw[2]}"))
                return None
            hp["q"] = v[2]
        return hp
    low, high = v[0], v[1]
    if high < low:
        problems.append(ErrorDetail(path, f"high must be >= low, got {raw}"))
        return None
    q = None
    if kind.startswith("q"):
        q = v[2]
        if q <= 0:
            problems.append(ErrorDetail(path, f"q must be > 0, got {raw[2]}"))
            return None
    if kind.endswith("loguniform"):
        if low <= 0:
            problems.append(ErrorDetail(path, f"{kind} needs low > 0, got {raw}"))
            return None
        # Exponents of e: base ** minval is low itself, so the clip range is NNI's.
        out: dict[str, Any] = {
            "type": "log",
            "base": math.e,
            "minval": math.log(low),
            "maxval": math.log(high),
        }
    else:
        out = {"type": "double", "minval": low, "maxval": high}
    if q is not None:
        out["q"] = q
    return out


def _choice(options: list[Any], where: str, problems: list[ErrorDetail], grid: bool) -> Any:
    converted: list[Any] = []
    for i, option in enumerate(options):
        if isinstance(option, dict):
            # A nested space: ``_name`` (and any plain value) is passed through as a constant,
            # every ``{_type, _value}`` inside is drawn when this option is chosen.
            nested: dict[str, Any] = {}
            for key, inner in option.items():
                if isinstance(inner, dict) and "_type" in inner:
                    hp = _convert(inner, f"{where}._value[{i}].{key}", problems, grid)
                    if hp is not None:
                        nested[str(key)] = hp
                else:
                    nested[str(key)] = {"type": "const", "val": inner}
            converted.append(nested)
        else:
            converted.append(option)
    return {"type": "choice", "options": converted}
