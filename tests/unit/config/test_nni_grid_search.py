"""NNI's GridSearch takes, for each quantized type, exactly the values NNI's does: every
integer of a ``randint`` ([low, high), high left out), every multiple of ``q`` of a
``quniform`` range, and the q-rounded values of a ``qloguniform`` range, clipped to it."""

from __future__ import annotations

from typing import Any

from assay.config import load_experiment_config, parse_hyperparameters, read_nni_config
from assay.searcher import grid


def grid_of(space: dict[str, Any], tuner: str = "GridSearch") -> list[dict[str, Any]]:
    data = {"trialCommand": "python3 t.py", "searchSpace": space, "tuner": {"name": tuner}}
    raw, _ = read_nni_config(data, ".")
    load_experiment_config(raw)
    return grid(parse_hyperparameters(raw["hyperparameters"]))


def values(space: dict[str, Any]) -> list[Any]:
    return [point["x"] for point in grid_of(space)]


def test_randint_grids_every_integer_below_high() -> None:
    assert values({"x": {"_type": "randint", "_value": [2, 7]}}) == [2, 3, 4, 5, 6]
    assert values({"x": {"_type": "randint", "_value": [-1, 0]}}) == [-1]


def test_quniform_grids_every_q_step_clipped_to_the_range() -> None:
    assert values({"x": {"_type": "quniform", "_value": [0, 10, 2.5]}}) == [0, 2.5, 5, 7.5, 10]
    # round(0.3) = 0 and round(2.9) = 3 are clipped to the ends, as NNI clips them.
    assert values({"x": {"_type": "quniform", "_value": [0.3, 2.9, 1]}}) == [0.3, 1, 2, 2.9]


def test_qloguniform_grids_the_q_rounded_values_with_exact_ends() -> None:
    got = values({"x": {"_type": "qloguniform", "_value": [1, 1000, 10]}})
    assert got[0] == 1 and got[-1] == 1000
    assert got[1:] == [10.0 * k for k in range(1, 101)]
    small = values({"x": {"_type": "qloguniform", "_value": [0.001, 0.01, 0.001]}})
    assert small[0] == 0.001 and small[-1] == 0.01
    assert len(small) == 10


def test_grid_is_the_product_of_the_exact_axes() -> None:
    points = grid_of(
        {
            "n": {"_type": "randint", "_value": [0, 3]},
            "q": {"_type": "quniform", "_value": [1, 2, 1]},
            "c": {"_type": "choice", "_value": ["a", "b"]},
        }
    )
    assert len(points) == 3 * 2 * 2
    assert {p["n"] for p in points} == {0, 1, 2}


def test_randint_inside_a_nested_choice_is_gridded_too() -> None:
    space = {
        "x": {
            "_type": "choice",
            "_value": [{"_name": "a", "k": {"_type": "randint", "_value": [1, 4]}}, {"_name": "b"}],
        }
    }
    got = [p["x"] for p in grid_of(space)]
    assert got == [
        {"_name": "a", "k": 1},
        {"_name": "a", "k": 2},
        {"_name": "a", "k": 3},
        {"_name": "b"},
    ]


def test_other_tuners_keep_the_ranges() -> None:
    data = {
        "trialCommand": "python3 t.py",
        "searchSpace": {
            "n": {"_type": "randint", "_value": [0, 3]},
            "x": {"_type": "qloguniform", "_value": [1, 1000, 10]},
        },
        "tuner": {"name": "TPE"},
    }
    raw, _ = read_nni_config(data, ".")
    assert "count" not in raw["hyperparameters"]["n"]
    assert raw["hyperparameters"]["x"]["type"] == "log"
