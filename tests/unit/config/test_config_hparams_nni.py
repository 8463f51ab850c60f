"""NNI's distributions as hyperparameter types: ``q`` on double/log, normal, lognormal and nested
``choice``; their grids counted, and what a grid cannot enumerate refused by key."""

from __future__ import annotations

from typing import Any

import pytest

from assay.config import (
    GRID_COUNT_MESSAGE,
    ChoiceHP,
    ConstHP,
    DoubleHP,
    ErrorDetail,
    IntHP,
    LognormalHP,
    NormalHP,
    grid_points,
    grid_problems,
    hyperparameters_to_json,
    load_experiment_config,
    parse_hyperparameters,
    quantize,
    quantized_count,
)
from assay.errors import InvalidConfig

CHOICE = {
    "type": "choice",
    "options": [
        {"_name": "conv", "k": {"type": "int", "minval": 2, "maxval": 5}},
        {"_name": "none"},
        3,
        None,
        [1, 2],
    ],
}


def _experiment(hps: dict[str, Any], searcher: str = "random") -> dict[str, Any]:
    extra: dict[str, Any] = {} if searcher == "grid" else {"max_trials": 2}
    return {
        "entrypoint": "python3 train.py",
        "hyperparameters": hps,
        "searcher": {"name": searcher, "metric": "loss", **extra},
    }


def _problems(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(InvalidConfig) as info:
        load_experiment_config(raw)
    return [f"{d.path}: {d.message}" for d in info.value.details]


def test_new_types_parse_into_their_models() -> None:
    hps = parse_hyperparameters(
        {
            "q": {"type": "double", "minval": 0, "maxval": 1, "q": 0.25},
            "n": {"type": "normal", "mu": 1, "sigma": 2, "q": 0.5},
            "ln": {"type": "lognormal", "mu": 0, "sigma": 1},
            "c": CHOICE,
        }
    )
    assert hps["q"] == DoubleHP(type="double", minval=0, maxval=1, q=0.25)
    assert hps["n"] == NormalHP(type="normal", mu=1, sigma=2, q=0.5)
    assert hps["ln"] == LognormalHP(type="lognormal", mu=0, sigma=1)
    choice = hps["c"]
    assert isinstance(choice, ChoiceHP)
    conv = choice.options[0]
    assert conv["_name"] == ConstHP(val="conv")
    assert conv["k"] == IntHP(type="int", minval=2, maxval=5)
    assert choice.options[2:] == [3, None, [1, 2]]


def test_new_types_round_trip_through_json() -> None:
    hps = parse_hyperparameters(
        {
            "c": CHOICE,
            "l": {"type": "log", "minval": -3, "maxval": 0, "base": 2, "q": 0.01},
            "n": {"type": "normal", "mu": 0, "sigma": 1},
        }
    )
    assert parse_hyperparameters(hyperparameters_to_json(hps)) == hps


@pytest.mark.parametrize(
    ("hp", "expected"),
    [
        ({"type": "normal", "mu": 0, "sigma": 0}, "hyperparameters.x.sigma: must be > 0, got 0"),
        ({"type": "lognormal", "mu": 0}, "hyperparameters.x.sigma: required"),
        (
            {"type": "normal", "mu": 1e307, "sigma": 1e307},
            "hyperparameters.x.sigma: mu +- 40 * sigma (1e+307 +- 40 * 1e+307) is beyond",
        ),
        (
            {"type": "double", "minval": 0, "maxval": 1, "q": -1},
            "hyperparameters.x.q: must be > 0, got -1",
        ),
        (
            {"type": "log", "minval": 0, "maxval": 1, "q": 0},
            "hyperparameters.x.q: must be > 0, got 0",
        ),
        ({"type": "choice", "options": []}, "hyperparameters.x.options: must have at least 1"),
        (
            {"type": "choice", "options": [{"_name": "a", "k": {"type": "int", "minval": 1}}]},
            "hyperparameters.x.options[0].k.maxval: required",
        ),
        ({"type": "choice", "vals": [1]}, "hyperparameters.x.options: required"),
    ],
)
def test_bad_definitions_are_refused_at_their_key(hp: dict[str, Any], expected: str) -> None:
    problems = _problems(_experiment({"x": hp}))
    assert any(p.startswith(expected) for p in problems), problems


def test_quantize_rounds_half_to_even_and_clips() -> None:
    assert quantize(0.37, 0.25) == 0.25
    assert quantize(0.375, 0.25) == 0.5  # 1.5 rounds to 2
    assert quantize(0.125, 0.25) == 0.0  # 0.5 rounds to 0
    assert quantize(0.05, 0.25, 0.1, 1.0) == 0.1  # round(0.2) * q = 0, clipped up to low
    assert quantize(0.99, 0.25, 0.0, 0.9) == 0.9  # round(3.96) * q = 1.0, clipped down


def test_quantized_range_counts_every_reachable_value() -> None:
    assert quantized_count(0.0, 1.0, 0.25) == 5  # 0, .25, .5, .75, 1
    assert quantized_count(0.1, 0.9, 0.25) == 5  # .1 (clipped 0), .25, .5, .75, .9 (clipped 1)
    assert quantized_count(2.0, 2.0, 0.5) == 1
    assert quantized_count(0.0, 1e308, 1e-300) > 10**30


def test_grid_counts_quantized_and_choice_axes() -> None:
    hps = parse_hyperparameters(
        {
            "q": {"type": "double", "minval": 0, "maxval": 1, "q": 0.25},
            "qc": {"type": "double", "minval": 0, "maxval": 1, "q": 0.25, "count": 3},
            "c": {
                "type": "choice",
                "options": [
                    {"k": {"type": "int", "minval": 1, "maxval": 3, "count": 3}, "b": [1, 2]},
                    "plain",
                ],
            },
        }
    )
    assert grid_points(hps) == 5 * 3 * (3 + 1)


def test_grid_refuses_normal_families_and_missing_counts_inside_options() -> None:
    hps = {
        "n": {"type": "normal", "mu": 0, "sigma": 1},
        "deep": {"ln": {"type": "lognormal", "mu": 0, "sigma": 1}},
        "q": {"type": "double", "minval": 0, "maxval": 1, "q": 0.1},
        "c": {"type": "choice", "options": [{"k": {"type": "int", "minval": 1, "maxval": 3}}, 1]},
    }
    problems = grid_problems(hps, "hyperparameters")
    assert [p.path for p in problems] == [
        "hyperparameters.n",
        "hyperparameters.deep.ln",
        "hyperparameters.c.options[0].k",
    ]
    assert "cannot enumerate a normal distribution" in problems[0].message
    assert "cannot enumerate a lognormal distribution" in problems[1].message
    assert problems[2] == ErrorDetail("hyperparameters.c.options[0].k", GRID_COUNT_MESSAGE)


def test_a_grid_experiment_with_a_normal_is_refused_naming_the_key() -> None:
    problems = _problems(_experiment({"noise": {"type": "normal", "mu": 0, "sigma": 1}}, "grid"))
    assert problems == [
        "hyperparameters.noise: grid search cannot enumerate a normal distribution (it has no "
        "bounds); use a double or log with count or q, or a categorical, or another searcher"
    ]


def test_a_grid_over_q_doubles_needs_no_count() -> None:
    cfg = load_experiment_config(
        _experiment({"d": {"type": "double", "minval": 0, "maxval": 1, "q": 0.5}}, "grid")
    )
    assert grid_points(dict(cfg.hyperparameters)) == 3


@pytest.mark.parametrize(
    ("searcher", "expected"),
    [
        ({"name": "anneal", "max_trials": 5}, {"max_trials": 5, "max_concurrent_trials": 16}),
        ({"name": "evolution", "max_trials": 50}, {"population_size": 32, "max_trials": 50}),
        ({"name": "batch", "points": [{"a": 1}, {"a": 2}]}, {"points": [{"a": 1}, {"a": 2}]}),
        ({"name": "hyperband", "sampler": "tpe", "max_length": 27}, {"divisor": 3.0}),
    ],
)
def test_nni_searchers_parse(searcher: dict[str, Any], expected: dict[str, Any]) -> None:
    cfg = load_experiment_config(
        {"entrypoint": "x", "searcher": {"metric": "loss", **searcher}, "hyperparameters": {}}
    )
    for key, value in expected.items():
        assert getattr(cfg.searcher, key) == value


def test_sampler_shorthand_is_the_sampler_section() -> None:
    raw = {"name": "hyperband", "metric": "l", "max_length": 9}
    short = load_experiment_config({"entrypoint": "x", "searcher": {**raw, "sampler": "tpe"}})
    long = load_experiment_config(
        {"entrypoint": "x", "searcher": {**raw, "sampler": {"name": "tpe"}}}
    )
    assert short.searcher == long.searcher


@pytest.mark.parametrize(
    ("searcher", "expected"),
    [
        ({"name": "batch", "points": []}, "searcher.points: must have at least 1"),
        ({"name": "batch", "points": [1]}, "searcher.points[0]: must be"),
        ({"name": "evolution", "max_trials": 4, "population_size": 0}, "searcher.population_size"),
        ({"name": "anneal"}, "searcher.max_trials: required"),
        ({"name": "hyperband", "max_length": 9, "sampler": "bogus"}, "searcher.sampler.name"),
    ],
)
def test_bad_nni_searchers_are_refused(searcher: dict[str, Any], expected: str) -> None:
    problems = _problems({"entrypoint": "x", "searcher": {"metric": "l", **searcher}})
    assert any(p.startswith(expected) for p in problems), problems


def test_hyperparameters_inside_choice_options_count_toward_the_limit() -> None:
    options = [{f"h{i}": {"type": "int", "minval": 0, "maxval": 1} for i in range(6000)}] * 2
    problems = _problems(_experiment({"c": {"type": "choice", "options": options}}))
    assert problems == ["hyperparameters: has 12,001 hyperparameters; at most 10,000"]
