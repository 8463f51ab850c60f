"""Hyperparameter definitions, as in Determined's expconf.

A hyperparameter is ``const``, ``int``, ``double``, ``log`` or ``categorical`` (a map with a
``type`` key); a map without ``type`` nests further hyperparameters; any other value (a scalar, a
list, null) is a constant.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import (
    BeforeValidator,
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
    model_validator,
)
from pydantic_core import PydanticCustomError
from typing_extensions import TypeAliasType

from assay.config._base import ConfigModel

HP_TYPES = ("const", "int", "double", "log", "categorical")


class ConstHP(ConfigModel):
    """A fixed value."""

    type: Literal["const"] = "const"
    val: Any = None

    @model_validator(mode="before")
    @classmethod
    def _keep_null_val(cls, data: Any) -> Any:
        # ``val: null`` is a legitimate constant; the base class would drop it.
        return data


class IntHP(ConfigModel):
    """An integer drawn from ``[minval, maxval]``, both ends included. ``count`` is for grid."""

    type: Literal["int"]
    minval: int
    maxval: int
    count: Annotated[int, Field(ge=1)] | None = None

    @model_validator(mode="after")
    def _ordered(self) -> IntHP:
        if self.minval > self.maxval:
            raise ValueError(f"minval ({self.minval}) must be <= maxval ({self.maxval})")
        return self


class DoubleHP(ConfigModel):
    """A float drawn uniformly from ``[minval, maxval]``."""

    type: Literal["double"]
    minval: float
    maxval: float
    count: Annotated[int, Field(ge=1)] | None = None

    @model_validator(mode="after")
    def _ordered(self) -> DoubleHP:
        if self.minval > self.maxval:
            raise ValueError(f"minval ({self.minval}) must be <= maxval ({self.maxval})")
        return self


class LogHP(ConfigModel):
    """``base ** u`` with ``u`` drawn uniformly from ``[minval, maxval]`` (the exponents)."""

    type: Literal["log"]
    minval: float
    maxval: float
    base: float = 10.0
    count: Annotated[int, Field(ge=1)] | None = None

    @model_validator(mode="after")
    def _ordered(self) -> LogHP:
        if self.minval > self.maxval:
            raise ValueError(f"minval ({self.minval}) must be <= maxval ({self.maxval})")
        if self.base <= 0:
            raise ValueError(f"base must be > 0, got {self.base}")
        return self


class CategoricalHP(ConfigModel):
    """One of ``vals``."""

    type: Literal["categorical"]
    vals: Annotated[list[Any], Field(min_length=1)]


def _kind(value: Any) -> str:
    if isinstance(value, ConfigModel):
        return str(getattr(value, "type", "nested"))
    if isinstance(value, dict):
        if "type" not in value:
            return "nested"
        kind = value["type"]
        return kind if kind in HP_TYPES else "unknown"
    return "implicit"


def _implicit_const(value: Any) -> ConstHP:
    return ConstHP(type="const", val=value)


def _unknown_type(value: Any) -> Any:
    raise PydanticCustomError(
        "hp_type",
        "unknown hyperparameter type '{got}'; expected one of: {expected}, "
        "or a map without 'type' to nest hyperparameters",
        {"got": value.get("type"), "expected": ", ".join(HP_TYPES)},
    )


Hyperparameter = TypeAliasType(
    "Hyperparameter",
    Annotated[
        Annotated[ConstHP, Tag("const")]
        | Annotated[IntHP, Tag("int")]
        | Annotated[DoubleHP, Tag("double")]
        | Annotated[LogHP, Tag("log")]
        | Annotated[CategoricalHP, Tag("categorical")]
        | Annotated[dict[str, "Hyperparameter"], Tag("nested")]
        | Annotated[ConstHP, BeforeValidator(_implicit_const), Tag("implicit")]
        | Annotated[Any, BeforeValidator(_unknown_type), Tag("unknown")],
        Discriminator(_kind),
    ],
)
"""One hyperparameter definition, or a nested map of them."""

Hyperparameters: TypeAlias = dict[str, Hyperparameter]

SearchableHP = IntHP | DoubleHP | LogHP | CategoricalHP

_ADAPTER: TypeAdapter[dict[str, Any]] = TypeAdapter(Hyperparameters)


def parse_hyperparameters(raw: dict[str, Any]) -> dict[str, Any]:
    """Validate a raw ``hyperparameters`` map into models (raises pydantic's ValidationError)."""
    return _ADAPTER.validate_python(raw)


def hyperparameters_to_json(hps: dict[str, Any]) -> dict[str, Any]:
    """The JSON form of a hyperparameter map: every leaf explicit (``{type: const, val: ...}``)."""
    return _ADAPTER.dump_python(hps, mode="json")


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
