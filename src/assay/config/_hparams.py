"""Hyperparameter definitions, as in Determined's expconf, with NNI's distributions added.

A hyperparameter is ``const``, ``int``, ``double``, ``log``, ``categorical``, ``normal``,
``lognormal`` or ``choice`` (a map with a ``type`` key); a map without ``type`` nests further
hyperparameters; any other value (a scalar, a list, null) is a constant. ``q`` quantizes as NNI
does: ``clip(round(x / q) * q, low, high)`` for the bounded types, ``round(x / q) * q`` for the
normal ones. A ``choice`` option that is a map is a nested hyperparameter map of its own, drawn
only when that option is chosen.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias

from pydantic import BeforeValidator, Discriminator, Field, Tag, TypeAdapter
from typing_extensions import TypeAliasType

from assay.config._base import ConfigModel, Problem, raise_problems, show
from assay.config._limits import MAX_NAME

HP_TYPES = ("const", "int", "double", "log", "categorical", "normal", "lognormal", "choice")

HPName = Annotated[str, Field(max_length=MAX_NAME)]
"""A hyperparameter's name (each level of a nested one)."""

Quantum = Annotated[float, Field(gt=0)]
"""``q``: values are rounded to a multiple of it (NNI's ``quniform`` and friends)."""
Spread = Annotated[float, Field(gt=0)]
"""``sigma`` of a normal distribution."""


class ConstHP(ConfigModel):
    """A fixed value (``val: null`` is a legitimate constant: the default is None too)."""

    type: Literal["const"] = "const"
    val: Any = None


class _RangeHP(ConfigModel):
    @classmethod
    def _cross_checks(cls, data: dict[str, Any]) -> list[Problem]:
        low, high = data.get("minval"), data.get("maxval")
        if not (isinstance(low, int | float) and isinstance(high, int | float)):
            return []  # the fields' own checks say what is wrong
        if not (_is_finite(low) and _is_finite(high)):
            return []
        if low > high:
            return [(("maxval",), f"must be >= minval ({low}), got {high}")]
        return cls._span_checks(low, high, data)

    @classmethod
    def _span_checks(cls, low: float, high: float, data: dict[str, Any]) -> list[Problem]:
        return []


def _is_finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


class IntHP(_RangeHP):
    """An integer drawn from ``[minval, maxval]``, both ends included. ``count`` is for grid."""

    type: Literal["int"]
    minval: int
    maxval: int
    count: Annotated[int, Field(ge=1)] | None = None


class DoubleHP(_RangeHP):
    """A float drawn uniformly from ``[minval, maxval]``; with ``q``, then rounded to a multiple
    of ``q`` and clipped to the range (NNI's ``quniform``)."""

    type: Literal["double"]
    minval: float
    maxval: float
    count: Annotated[int, Field(ge=1)] | None = None
    q: Quantum | None = None

    @classmethod
    def _span_checks(cls, low: float, high: float, data: dict[str, Any]) -> list[Problem]:
        # Values are drawn as minval + (maxval - minval) * u: the width must be a float too.
        if not math.isfinite(float(high) - float(low)):
            width = f"maxval - minval ({high} - {low})"
            return [(("maxval",), f"{width} is beyond the range of a float")]
        return []


class LogHP(_RangeHP):
    """``base ** u`` with ``u`` drawn uniformly from ``[minval, maxval]`` (the exponents); with
    ``q``, the value (not the exponent) is then rounded to a multiple of ``q`` and clipped to
    ``[base ** minval, base ** maxval]`` (NNI's ``qloguniform``)."""

    type: Literal["log"]
    minval: float
    maxval: float
    base: Annotated[float, Field(gt=0)] = 10.0
    count: Annotated[int, Field(ge=1)] | None = None
    q: Quantum | None = None

    @classmethod
    def _span_checks(cls, low: float, high: float, data: dict[str, Any]) -> list[Problem]:
        base = data.get("base", 10.0)
        if not _is_finite(base) or base <= 0:
            return []
        for key, exponent in (("minval", low), ("maxval", high)):
            try:
                float(base) ** float(exponent)
            except OverflowError:
                power = f"base ** {key} ({base} ** {exponent})"
                return [((key,), f"{power} is beyond the range of a float")]
        return []


class CategoricalHP(ConfigModel):
    """One of ``vals``."""

    type: Literal["categorical"]
    vals: Annotated[list[Any], Field(min_length=1)]


class _NormalFamily(ConfigModel):
    @classmethod
    def _cross_checks(cls, data: dict[str, Any]) -> list[Problem]:
        mu: Any = data.get("mu")
        sigma: Any = data.get("sigma")
        if not (_is_finite(mu) and _is_finite(sigma)):
            return []  # the fields' own checks say what is wrong
        # Draws reach about mu +- 40 sigma at the very most; they must stay floats (JSON).
        if not math.isfinite(abs(float(mu)) + 40 * abs(float(sigma))):
            return [
                (
                    ("sigma",),
                    f"mu +- 40 * sigma ({mu} +- 40 * {sigma}) is beyond the range of a float",
                )
            ]
        return []


class NormalHP(_NormalFamily):
    """A float drawn from the normal distribution ``N(mu, sigma)``; with ``q``, rounded to a
    multiple of ``q`` (NNI's ``normal`` and ``qnormal``)."""

    type: Literal["normal"]
    mu: float
    sigma: Spread
    q: Quantum | None = None


class LognormalHP(_NormalFamily):
    """``exp(x)`` with ``x`` drawn from ``N(mu, sigma)``; with ``q``, the value is rounded to a
    multiple of ``q`` (NNI's ``lognormal`` and ``qlognormal``)."""

    type: Literal["lognormal"]
    mu: float
    sigma: Spread
    q: Quantum | None = None


class ChoiceHP(ConfigModel):
    """One of ``options`` (NNI's ``choice``). An option is a constant (a scalar, a list, null) or
    a map, which is a nested hyperparameter map drawn only when the option is chosen: the trial
    receives the chosen option with its hyperparameters resolved."""

    type: Literal["choice"]
    options: Annotated[list[ChoiceOption], Field(min_length=1)]


def _kind(value: Any) -> str:
    # Tags are written "<...>" so error paths can drop them (see ``_errors.py``).
    if isinstance(value, ConfigModel):
        return f"<{getattr(value, 'type', 'nested')}>"
    if isinstance(value, dict):
        if "type" not in value:
            return "<nested>"
        kind = value["type"]
        return f"<{kind}>" if kind in HP_TYPES else "<unknown>"
    return "<implicit>"


def _implicit_const(value: Any) -> ConstHP:
    return ConstHP(type="const", val=value)


def _unknown_type(value: Any) -> Any:
    expected = ", ".join(HP_TYPES)
    raise_problems(
        [
            (
                ("type",),
                f"unknown hyperparameter type {show(value.get('type'))}; expected one of: "
                f"{expected}, or a map without 'type' to nest hyperparameters",
            )
        ],
        value,
        "Hyperparameter",
    )


def _option_kind(value: Any) -> str:
    return "<map>" if isinstance(value, dict) else "<constant>"


if TYPE_CHECKING:
    # What a validated definition is; mypy cannot follow the recursive TypeAliasType below.
    Hyperparameter: TypeAlias = (
        "ConstHP | IntHP | DoubleHP | LogHP | CategoricalHP | NormalHP | LognormalHP | ChoiceHP"
        " | dict[str, Hyperparameter]"
    )
    ChoiceOption: TypeAlias = "dict[str, Hyperparameter] | Any"
else:
    Hyperparameter = TypeAliasType(
        "Hyperparameter",
        Annotated[
            Annotated[ConstHP, Tag("<const>")]
            | Annotated[IntHP, Tag("<int>")]
            | Annotated[DoubleHP, Tag("<double>")]
            | Annotated[LogHP, Tag("<log>")]
            | Annotated[CategoricalHP, Tag("<categorical>")]
            | Annotated[NormalHP, Tag("<normal>")]
            | Annotated[LognormalHP, Tag("<lognormal>")]
            | Annotated[ChoiceHP, Tag("<choice>")]
            | Annotated[dict[HPName, "Hyperparameter"], Tag("<nested>")]
            | Annotated[ConstHP, BeforeValidator(_implicit_const), Tag("<implicit>")]
            | Annotated[Any, BeforeValidator(_unknown_type), Tag("<unknown>")],
            Discriminator(_kind),
        ],
    )
    """One hyperparameter definition, or a nested map of them."""

    ChoiceOption = TypeAliasType(
        "ChoiceOption",
        Annotated[
            Annotated[dict[HPName, Hyperparameter], Tag("<map>")]
            | Annotated[Any, Tag("<constant>")],
            Discriminator(_option_kind),
        ],
    )
    """One option of a ``choice``: a nested hyperparameter map, or a constant as it is."""

ChoiceHP.model_rebuild()

Hyperparameters: TypeAlias = dict[HPName, Hyperparameter]

SearchableHP = IntHP | DoubleHP | LogHP | CategoricalHP | NormalHP | LognormalHP | ChoiceHP

_ADAPTER: TypeAdapter[dict[str, Any]] = TypeAdapter(Hyperparameters)


def parse_hyperparameters(raw: dict[str, Any]) -> dict[str, Any]:
    """Validate a raw ``hyperparameters`` map into models (raises pydantic's ValidationError)."""
    return _ADAPTER.validate_python(raw)


def hyperparameters_to_json(hps: dict[str, Any]) -> dict[str, Any]:
    """The JSON form of a hyperparameter map: every leaf explicit (``{type: const, val: ...}``)."""
    out: dict[str, Any] = _ADAPTER.dump_python(hps, mode="json")
    return out


def flatten(hps: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Flatten nested hyperparameters to ``{"outer.inner": definition}``, in definition order.

    The dotted names are stable, so samplers that need flat spaces (Optuna's) see the same name
    for the same hyperparameter across trials and master restarts.
    """
    flat: dict[str, Any] = {}
    for name, hp in hps.items():
        key = f"{prefix}{name}"
        if isinstance(hp, dict):
            flat.update(flatten(hp, f"{key}."))
        else:
            flat[key] = hp
    return flat


def unflatten(values: dict[str, Any]) -> dict[str, Any]:
    """Inverse of :func:`flatten` for sampled values: ``{"a.b": 1}`` -> ``{"a": {"b": 1}}``."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        node = out
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return out
