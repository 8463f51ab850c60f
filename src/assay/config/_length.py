"""Training lengths: ``{batches: N}``, ``{records: N}`` or ``{epochs: N}``, or a bare unitless N."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    ModelWrapValidatorHandler,
    model_serializer,
    model_validator,
)

from assay.config._base import Problem, config_error, raise_problems, show
from assay.config._limits import DB_INT_MAX

_LENGTH_ERROR = 'a length object must have one attribute named "batches", "records", or "epochs"'
_UNITS = ("batches", "records", "epochs")


class Unit(StrEnum):
    BATCHES = "batches"
    RECORDS = "records"
    EPOCHS = "epochs"
    UNITLESS = "unitless"


class Length(BaseModel):
    """A training length in one unit. Lengths are absolute ("train to L"), never increments.

    Accepts ``{batches: 100}`` and friends, or a bare integer, which is unitless (the searcher's
    ``time_metric`` names what it counts). Problems are reported at the unit's key
    (``min_validation_period.batches: must be >= 0, got -1``).
    """

    model_config = ConfigDict(frozen=True)

    unit: Unit
    value: int

    @model_validator(mode="wrap")
    @classmethod
    def _parse(cls, data: Any, handler: ModelWrapValidatorHandler[Length]) -> Length:
        if isinstance(data, Length):
            return data
        if isinstance(data, dict) and "unit" in data and set(data) <= {"unit", "value"}:
            length = handler(data)
            problem = _range_problem(length.value)
            if problem is not None:
                where: tuple[str, ...] = () if length.unit is Unit.UNITLESS else ("value",)
                raise_problems([(where, problem)], data, "Length")
            return length
        return handler(_parse_length(data))

    @model_serializer
    def _serialize(self) -> Any:
        if self.unit is Unit.UNITLESS:
            return self.value
        return {self.unit.value: self.value}

    def __str__(self) -> str:
        if self.unit is Unit.UNITLESS:
            return str(self.value)
        return f"{self.value} {self.unit.value}"


def _parse_length(data: Any) -> dict[str, Any]:
    if isinstance(data, bool):
        raise config_error(f"must be an integer or {_LENGTH_ERROR}, got {show(data)}")
    if isinstance(data, int):
        problem = _range_problem(data)
        if problem is not None:
            raise config_error(problem)
        return {"unit": Unit.UNITLESS, "value": data}
    if not isinstance(data, dict):
        raise config_error(f"{_LENGTH_ERROR}, got {show(data)}")
    keys = [k for k in data if data[k] is not None]
    if len(keys) != 1 or keys[0] not in _UNITS:
        raise config_error(_LENGTH_ERROR)
    key = keys[0]
    value = data[key]
    problems: list[Problem] = []
    if isinstance(value, bool) or not isinstance(value, int):
        problems.append(((key,), f"must be an integer, got {show(value)}"))
    elif (problem := _range_problem(value)) is not None:
        problems.append(((key,), problem))
    if problems:
        raise_problems(problems, data, "Length")
    return {"unit": key, "value": value}


def _range_problem(value: int) -> str | None:
    if value < 0:
        return f"must be >= 0, got {value}"
    if value > DB_INT_MAX:
        # Trials report the steps they completed, which the database keeps in an integer.
        longest = f"{DB_INT_MAX:,} (the longest length a trial can report)"
        return f"must be <= {longest}, got {show(value)}"
    return None


def _positive(length: Length) -> Length:
    if length.value <= 0:
        # Point at the unit's key, as Determined's check-positive-length does.
        where: tuple[str, ...] = () if length.unit is Unit.UNITLESS else (length.unit.value,)
        raise_problems([(where, f"must be > 0, got {length.value}")], length, "Length")
    return length


PositiveLength = Annotated[Length, AfterValidator(_positive)]
"""A :class:`Length` that must be more than zero (PBT's ``length_per_round``...)."""


def _searcher_length(length: Length) -> Length:
    # Determined's searcher-length: a bare integer may be 0, a length in a unit must be more.
    return length if length.unit is Unit.UNITLESS else _positive(length)


SearcherLength = Annotated[Length, AfterValidator(_searcher_length)]
"""A searcher's ``max_length``: more than zero in a unit (``{batches: 0}`` would train nothing),
a bare integer (Determined 0.38's unitless lengths) at least zero."""
