"""Hyperparameter definitions and training lengths."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from assay.config import (
    GRID_COUNT_MESSAGE,
    CategoricalHP,
    ConstHP,
    DoubleHP,
    ErrorDetail,
    IntHP,
    Length,
    LogHP,
    PositiveLength,
    Unit,
    flatten,
    grid_problems,
    hyperparameters_to_json,
    parse_hyperparameters,
    unflatten,
)


def test_every_hyperparameter_kind_parses() -> None:
    hps = parse_hyperparameters(
        {
            "c": {"type": "const", "val": [1, 2]},
            "i": {"type": "int", "minval": 1, "maxval": 1},
            "d": {"type": "double", "minval": 0, "maxval": 0.5, "count": 3},
            "l": {"type": "log", "minval": -4, "maxval": -1},
            "k": {"type": "categorical", "vals": ["a", None]},
            "nest": {"depth": 3, "inner": {"type": "int", "minval": 0, "maxval": 9}},
            "bare_list": [1, "fish"],
            "bare_null": None,
        }
    )
    assert hps["c"] == ConstHP(val=[1, 2])
    assert hps["i"] == IntHP(type="int", minval=1, maxval=1)
    assert isinstance(hps["d"], DoubleHP) and hps["d"].minval == 0.0
    assert isinstance(hps["l"], LogHP) and hps["l"].base == 10.0
    assert hps["k"] == CategoricalHP(type="categorical", vals=["a", None])
    assert hps["nest"]["depth"] == ConstHP(val=3)
    assert hps["bare_list"] == ConstHP(val=[1, "fish"]) and hps["bare_null"] == ConstHP()


@pytest.mark.parametrize(
    "bad",
    [
        {"type": "int", "minval": 1.5, "maxval": 3},
        {"type": "int", "minval": "1", "maxval": 3},
        {"type": "log", "minval": 1, "maxval": 2, "base": 0},
        {"type": "categorical", "vals": []},
        {"type": "double", "minval": 3, "maxval": 1},
        {"type": "uniform", "minval": 0, "maxval": 1},
    ],
)
def test_malformed_hyperparameters_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        parse_hyperparameters({"x": bad})


@settings(max_examples=50, deadline=None)
@given(
    st.dictionaries(
        st.text("abc", min_size=1, max_size=3),
        st.dictionaries(st.text("xyz", min_size=1, max_size=3), st.integers(), max_size=3)
        | st.integers(),
        max_size=4,
    )
)
def test_flatten_then_unflatten_restores_nesting(values: dict[str, Any]) -> None:
    values = {k: v for k, v in values.items() if v != {}}
    assert unflatten(flatten(values)) == values


def test_hyperparameters_json_round_trips() -> None:
    raw = {"lr": 0.1, "n": {"type": "int", "minval": 1, "maxval": 4}, "g": {"a": [1]}}
    hps = parse_hyperparameters(raw)
    assert parse_hyperparameters(hyperparameters_to_json(hps)) == hps


def test_grid_problems_walk_nested_maps_and_list_constants() -> None:
    hps = {
        "ok": {"type": "int", "minval": 1, "maxval": 2, "count": 2},
        "a": {"b": {"type": "double", "minval": 0, "maxval": 1}},
        "l": [{"type": "log", "minval": 0, "maxval": 1}, [{"type": "int"}]],
        "explicit": {"type": "const", "val": [{"type": "double", "minval": 0, "maxval": 1}]},
        "cat": {"type": "categorical", "vals": [1]},
    }
    assert grid_problems(hps, "hyperparameters") == [
        ErrorDetail("hyperparameters.a.b", GRID_COUNT_MESSAGE),
        ErrorDetail("hyperparameters.l[0]", GRID_COUNT_MESSAGE),
        ErrorDetail("hyperparameters.l[1][0]", GRID_COUNT_MESSAGE),
        ErrorDetail("hyperparameters.explicit[0]", GRID_COUNT_MESSAGE),
    ]


_LENGTH: TypeAdapter[Length] = TypeAdapter(Length)
_POSITIVE: TypeAdapter[Length] = TypeAdapter(PositiveLength)


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(["batches", "records", "epochs", None]), st.integers(0, 10**9))
def test_length_round_trips_through_json(unit: str | None, value: int) -> None:
    raw: Any = value if unit is None else {unit: value}
    length = _LENGTH.validate_python(raw)
    assert length.value == value
    assert length.unit == (Unit.UNITLESS if unit is None else Unit(unit))
    assert _LENGTH.dump_python(length, mode="json") == raw
    assert _LENGTH.validate_python(_LENGTH.dump_python(length)) == length


def test_length_prints_for_people() -> None:
    assert str(Length(unit=Unit.EPOCHS, value=3)) == "3 epochs"
    assert str(_LENGTH.validate_python(7)) == "7"


@pytest.mark.parametrize(
    "bad", [{}, {"batches": 1, "epochs": 1}, {"steps": 1}, True, "10", {"batches": 1.5}, -1]
)
def test_malformed_lengths_are_refused(bad: Any) -> None:
    with pytest.raises(ValidationError):
        _LENGTH.validate_python(bad)


def test_constructing_a_negative_length_in_code_is_refused() -> None:
    with pytest.raises(ValidationError, match="must be >= 0"):
        Length(unit=Unit.BATCHES, value=-1)


def test_positive_length_refuses_zero_at_the_unit_key() -> None:
    assert _POSITIVE.validate_python({"records": 1}).value == 1
    with pytest.raises(ValidationError) as info:
        _POSITIVE.validate_python({"records": 0})
    assert info.value.errors()[0]["loc"] == ("records",)
