"""Training lengths: ``{batches: N}``, ``{records: N}`` or ``{epochs: N}``, or a bare unitless N."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, model_serializer, model_validator

_LENGTH_ERROR = 'a length object must have one attribute named "batches", "records", or "epochs"'


class Unit(StrEnum):
    BATCHES = "batches"
    RECORDS = "records"
    EPOCHS = "epochs"
    UNITLESS = "unitless"


class Length(BaseModel):
    """A training length in one unit. Lengths are absolute ("train to L"), never increments.

    Accepts ``{batches: 100}`` and friends, or a bare integer, which is unitless (the searcher's
    ``time_metric`` names what it counts).
    """

    model_config = ConfigDict(frozen=True)

    unit: Unit
    value: int

    @model_validator(mode="before")
    @classmethod
    def _parse(cls, data: Any) -> Any:
        if isinstance(data, Length):
            return data
        if isinstance(data, bool):
            raise ValueError(f"a length must be an integer or {_LENGTH_ERROR}, got {data!r}")
        if isinstance(data, int):
            return {"unit": Unit.UNITLESS, "value": data}
        if isinstance(data, dict) and set(data) <= {"unit", "value"} and "unit" in data:
            return data
        if not isinstance(data, dict):
            raise ValueError(f"{_LENGTH_ERROR}, got {data!r}")
        keys = [k for k in data if data[k] is not None]
        if len(keys) != 1 or keys[0] not in ("batches", "records", "epochs"):
            raise ValueError(_LENGTH_ERROR)
        value = data[keys[0]]
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{keys[0]} must be an integer, got {value!r}")
        return {"unit": keys[0], "value": value}

    @model_validator(mode="after")
    def _non_negative(self) -> Length:
        if self.value < 0:
            raise ValueError(f"{self.unit.value} must be >= 0, got {self.value}")
        return self

    @model_serializer
    def _serialize(self) -> Any:
        if self.unit is Unit.UNITLESS:
            return self.value
        return {self.unit.value: self.value}

    def __str__(self) -> str:
        if self.unit is Unit.UNITLESS:
            return str(self.value)
        return f"{self.value} {self.unit.value}"
