"""The config layer counts a search without building it; its counts agree with what the searchers
build, and a grid too big for any master is refused before one point is made."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.config import (
    InvalidConfig,
    grid_points,
    hyperband_trials,
    load_experiment_config,
    parse_hyperparameters,
)
from assay.searcher import Create, make_searcher, preview_search
from assay.searcher._hyperband import hyperband_brackets
from assay.searcher._space import grid

_bounds = st.integers(-50, 50)


@st.composite
def hyperparameter(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["int", "double", "log", "categorical", "const"]))
    if kind == "categorical":
        return {"type": kind, "vals": draw(st.lists(st.integers(), min_size=1, max_size=4))}
    if kind == "const":
        return {"type": kind, "val": draw(st.integers())}
    low, high = sorted((draw(_bounds), draw(_bounds)))
    return {"type": kind, "minval": low, "maxval": high, "count": draw(st.integers(1, 5))}


spaces = st.dictionaries(
    st.sampled_from(["a", "b", "c"]),
    st.one_of(hyperparameter(), st.dictionaries(st.sampled_from(["x", "y"]), hyperparameter())),
    max_size=3,
)
"""At most six hyperparameters of at most five values: grids of up to 15,625 points."""


@settings(max_examples=100, deadline=None)
@given(spaces)
def test_the_counted_grid_has_as_many_points_as_the_built_one(raw: dict[str, Any]) -> None:
    space = parse_hyperparameters(raw)
    assert grid_points(space) == len(grid(space))


@pytest.mark.parametrize("divisor", [1.5, 2, 3, 4.0, 7.3, 10])
@pytest.mark.parametrize("max_length", [1, 2, 9, 10, 11, 100, 1000, 4096, 12345])
def test_counted_hyperband_trials_are_those_its_brackets_start(
    max_length: int, divisor: float
) -> None:
    brackets = hyperband_brackets(max_length, divisor)
    assert hyperband_trials(max_length, divisor) == sum(b.trials for b in brackets)


def test_a_grid_past_the_absolute_limit_is_refused_before_it_is_built() -> None:
    space = parse_hyperparameters(
        {f"h{i}": {"type": "double", "minval": 0, "maxval": 1, "count": 10**6} for i in range(3)}
    )
    with pytest.raises(InvalidConfig) as info:
        grid(space)
    assert info.value.message == (
        "the grid has more than 1,000,000 points, the most an experiment may have"
    )


def test_a_grid_within_the_masters_limit_is_built_and_previewed() -> None:
    raw = {
        "entrypoint": "python3 train.py",
        "searcher": {"name": "grid", "metric": "loss", "max_length": 4},
        "hyperparameters": {"x": {"type": "int", "minval": 0, "maxval": 99, "count": 100}},
    }
    cfg = load_experiment_config(raw, max_grid_points=100)
    ops = make_searcher(cfg, 0).initial_operations()
    assert sum(isinstance(op, Create) for op in ops) == 16  # the default concurrency
    assert preview_search(cfg, seed=0).trials == 100


def test_preview_of_a_big_search_keeps_count_of_its_concurrency() -> None:
    # The preview once asked the searcher to count its active trials, over every trial it had
    # made, after every event: quadratic, so minutes for a search of this size.
    raw = {
        "entrypoint": "python3 train.py",
        "searcher": {
            "name": "random",
            "metric": "loss",
            "max_trials": 20_000,
            "max_concurrent_trials": 1000,
            "max_length": 10,
        },
        "hyperparameters": {"x": {"type": "double", "minval": 0, "maxval": 1}},
    }
    preview = preview_search(load_experiment_config(raw), seed=0)
    assert (preview.trials, preview.max_concurrency, preview.total_compute) == (
        20_000,
        1000,
        200_000,
    )
