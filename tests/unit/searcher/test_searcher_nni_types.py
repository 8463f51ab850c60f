"""NNI's distributions drawn by every searcher: values within their bounds and quantized, nested
choices resolved, grids enumerated and counted, Optuna's samplers and PBT, and the preview."""

from __future__ import annotations

import json
import math
import random
import statistics
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from assay.config import grid_points, load_experiment_config, parse_hyperparameters
from assay.errors import InvalidConfig
from assay.searcher import (
    OptunaSource,
    Outcome,
    preview_search,
)
from assay.searcher._basic import GridSearch
from assay.searcher._optuna import flat_params
from assay.searcher._pbt import explore
from assay.searcher._space import draw, grid, sample
from tests.unit.searcher.nni import NNI_SPACE, check_point


def test_random_draws_are_within_bounds_and_quantized() -> None:
    rng = random.Random(5)
    points = [sample(NNI_SPACE, rng) for _ in range(400)]
    for point in points:
        check_point(point)
    names = {p["model"]["_name"] if isinstance(p["model"], dict) else "plain" for p in points}
    assert names == {"conv", "mlp", "none", "plain"}
    assert {p["drop"] for p in points} >= {0.02, 0.97}, "the ends are reached by clipping"


def test_normal_and_lognormal_follow_their_distributions() -> None:
    space = parse_hyperparameters(
        {
            "n": {"type": "normal", "mu": 3, "sigma": 2},
            "ln": {"type": "lognormal", "mu": 1, "sigma": 0.5},
        }
    )
    rng = random.Random(11)
    points = [sample(space, rng) for _ in range(4000)]
    normals = [p["n"] for p in points]
    logs = [math.log(p["ln"]) for p in points]
    assert abs(statistics.fmean(normals) - 3) < 0.15
    assert abs(statistics.stdev(normals) - 2) < 0.15
    assert abs(statistics.fmean(logs) - 1) < 0.05
    assert abs(statistics.stdev(logs) - 0.5) < 0.05


def test_qlognormal_rounds_the_value_not_the_exponent() -> None:
    space = parse_hyperparameters({"v": {"type": "lognormal", "mu": 2, "sigma": 1, "q": 2}})
    rng = random.Random(3)
    values = [sample(space, rng)["v"] for _ in range(200)]
    assert all(v == round(v) and int(v) % 2 == 0 for v in values)
    assert len(set(values)) > 5


def test_the_genome_names_the_chosen_option_and_its_nested_values() -> None:
    space = parse_hyperparameters(
        {
            "m": {
                "type": "choice",
                "options": [{"_name": "a", "k": {"type": "int", "minval": 1, "maxval": 9}}, 5],
            }
        }
    )

    def pick(path: str, hp: Any) -> Any:
        return {"m": 0, "m.0.k": 4}[path]

    values, genome = draw(space, None, pick)
    assert values == {"m": {"_name": "a", "k": 4}}
    assert genome == {"m": 0, "m.0.k": 4}
    values, genome = draw(space, None, lambda path, hp: 1)
    assert values == {"m": 5} and genome == {"m": 1}


def test_grid_enumerates_quantized_values_and_each_options_grid() -> None:
    space = parse_hyperparameters(
        {
            "d": {"type": "double", "minval": 0.1, "maxval": 0.9, "q": 0.25},
            "m": {
                "type": "choice",
                "options": [
                    {"_name": "conv", "k": {"type": "int", "minval": 2, "maxval": 4, "count": 3}},
                    None,
                ],
            },
        }
    )
    points = grid(space)
    assert sorted({p["d"] for p in points}) == [0.1, 0.25, 0.5, 0.75, 0.9]
    models = [p["m"] for p in points if p["d"] == 0.5]
    assert models == [
        {"_name": "conv", "k": 2},
        {"_name": "conv", "k": 3},
        {"_name": "conv", "k": 4},
        None,
    ]
    assert len(points) == 5 * 4


def test_grid_with_count_and_q_spreads_over_the_quantized_values() -> None:
    space = parse_hyperparameters(
        {"d": {"type": "double", "minval": 0, "maxval": 1, "q": 0.1, "count": 3}}
    )
    assert [p["d"] for p in grid(space)] == [0.0, 0.5, 1.0]


def test_grid_search_refuses_a_normal_naming_its_key() -> None:
    space = parse_hyperparameters({"deep": {"n": {"type": "normal", "mu": 0, "sigma": 1}}})
    with pytest.raises(InvalidConfig, match=r"hyperparameters\.deep\.n: grid search cannot"):
        GridSearch(space, max_length=1, max_concurrent=1, rng=random.Random(0))


def test_optuna_searches_normals_as_quantiles_and_choices_as_indices() -> None:
    params, constants = flat_params(NNI_SPACE)
    assert params["model"].distribution == CategoricalDistribution([0, 1, 2, 3])
    assert params["model.0.k"].distribution == IntDistribution(2, 5)
    assert params["model.0.k"].conditional and not params["model"].conditional
    assert isinstance(params["model.1.width"].distribution, FloatDistribution)
    unit = params["shift"].distribution
    assert isinstance(unit, FloatDistribution) and unit.low <= 1e-6 and unit.high >= 1 - 1e-6
    assert params["shift"].from_optuna(0.5) == 3.0  # the median of N(3, 2)
    assert params["scale"].from_optuna(0.5) == 1.0  # exp of the median of N(0, 0.5)
    assert params["drop"].from_optuna(0.37) == pytest.approx(0.4)
    assert constants == {"fixed": 7}


@pytest.mark.parametrize("sampler", ["tpe", "random", "cmaes", "qmc", "gp"])
def test_optuna_samplers_give_points_of_the_space_and_restore(sampler: str) -> None:
    def fresh() -> OptunaSource:
        return OptunaSource(NNI_SPACE, sampler=sampler, seed=4, n_startup_trials=4)

    source = fresh()
    rng = random.Random(2)
    for i in range(6 if sampler == "gp" else 12):
        check_point(source.suggest(f"t{i}"))
        source.finish(f"t{i}", Outcome.COMPLETE, rng.random())
    if sampler == "gp":
        # Optuna's GP warm-starts each fit from the last one, which a replayed study does not
        # have, so its restored suggestions are close rather than equal, whatever the space.
        return
    restored = fresh()
    restored.restore(json.loads(json.dumps(source.snapshot())))
    assert restored.suggest("next") == source.suggest("next")


def test_tpe_learns_which_option_and_which_normal_quantile_is_good() -> None:
    space = parse_hyperparameters(
        {
            "m": {"type": "choice", "options": ["bad", {"_name": "good"}, "worse"]},
            "x": {"type": "normal", "mu": 0, "sigma": 1},
        }
    )
    source = OptunaSource(space, sampler="tpe", seed=1, n_startup_trials=8)
    late = []
    for i in range(50):
        point = source.suggest(f"t{i}")
        good = isinstance(point["m"], dict)
        source.finish(f"t{i}", Outcome.COMPLETE, (0 if good else 20) + (point["x"] - 1.5) ** 2)
        if i >= 30:
            late.append(point)
    # At random: a third of them good, and |x - 1.5| about 1.6 on average.
    assert sum(isinstance(p["m"], dict) for p in late) >= 10
    assert statistics.fmean(abs(p["x"] - 1.5) for p in late) < 1.0


def test_pbt_explore_keeps_choices_and_requantizes() -> None:
    rng = random.Random(9)
    parent = sample(NNI_SPACE, rng)
    for _ in range(100):
        child = explore(NNI_SPACE, parent, rng, resample_probability=0.2, perturb_factor=0.3)
        check_point(child)


@settings(max_examples=200, deadline=None)
@given(
    low=st.floats(-1e3, 1e3, allow_nan=False),
    width=st.floats(0, 1e3, allow_nan=False),
    q=st.floats(1e-2, 1e3, allow_nan=False),
    count=st.one_of(st.none(), st.integers(1, 50)),
    seed=st.integers(0, 2**32 - 1),
)
def test_q_double_draws_lie_on_its_grid_and_the_grid_is_counted_exactly(
    low: float, width: float, q: float, count: int | None, seed: int
) -> None:
    hp: dict[str, Any] = {"type": "double", "minval": low, "maxval": low + width, "q": q}
    if count is not None:
        hp["count"] = count
    space = parse_hyperparameters({"d": hp})
    points = [p["d"] for p in grid(space)]
    assert len(points) == grid_points(space)
    assert points == sorted(set(points)), "distinct and ascending"
    assert all(low <= p <= low + width for p in points)
    rng = random.Random(seed)
    full = set(points) if count is None else {p["d"] for p in grid(_without_count(space))}
    for _ in range(20):
        assert sample(space, rng)["d"] in full


def _without_count(space: dict[str, Any]) -> dict[str, Any]:
    return {name: hp.model_copy(update={"count": None}) for name, hp in space.items()}


NNI_RAW: dict[str, Any] = {
    "model": {
        "type": "choice",
        "options": [{"_name": "conv", "k": {"type": "int", "minval": 2, "maxval": 5}}, "plain"],
    },
    "drop": {"type": "double", "minval": 0, "maxval": 0.5, "q": 0.1},
    "lr": {"type": "log", "minval": -4, "maxval": -1, "q": 0.001},
    "shift": {"type": "normal", "mu": 0, "sigma": 1, "q": 0.5},
    "scale": {"type": "lognormal", "mu": 0, "sigma": 1},
}

PREVIEWED: dict[str, tuple[dict[str, Any], int]] = {
    "random": ({"name": "random", "max_trials": 6}, 6),
    "tpe": ({"name": "tpe", "max_trials": 6, "n_startup_trials": 2}, 6),
    "cmaes": ({"name": "cmaes", "max_trials": 6, "n_startup_trials": 2}, 6),
    "qmc": ({"name": "qmc", "max_trials": 6}, 6),
    "anneal": ({"name": "anneal", "max_trials": 6}, 6),
    "evolution": ({"name": "evolution", "max_trials": 9, "population_size": 3}, 9),
    "batch": ({"name": "batch", "points": [{"drop": 0.1}, {"model": "plain"}]}, 2),
    "bohb": ({"name": "hyperband", "sampler": "tpe", "max_trials": 9}, 9),
    "adaptive_asha": ({"name": "adaptive_asha", "max_trials": 8}, 8),
    "pbt": (
        {
            "name": "pbt",
            "population_size": 3,
            "num_rounds": 2,
            "length_per_round": {"batches": 4},
            "replace_function": {"truncate_fraction": 0.34},
            "explore_function": {"resample_probability": 0.2, "perturb_factor": 0.2},
        },
        4,  # three, and one copy after the first round
    ),
}


@pytest.mark.parametrize("key", sorted(PREVIEWED))
def test_preview_search_runs_every_searcher_over_nni_types(key: str) -> None:
    searcher, trials = PREVIEWED[key]
    length = {} if key == "pbt" else {"max_length": {"batches": 16}}
    cfg = load_experiment_config(
        {
            "entrypoint": "python3 train.py",
            "hyperparameters": NNI_RAW,
            "searcher": {"metric": "loss", **length, **searcher},
        }
    )
    preview = preview_search(cfg, 3)
    assert preview.failure is None
    assert preview.trials == trials


def test_preview_search_runs_a_grid_over_q_values_and_choices() -> None:
    hps = {k: v for k, v in NNI_RAW.items() if k in ("drop", "model")}
    hps["model"] = {
        "type": "choice",
        "options": [
            {"_name": "conv", "k": {"type": "int", "minval": 2, "maxval": 5, "count": 4}},
            "plain",
        ],
    }
    cfg = load_experiment_config(
        {
            "entrypoint": "python3 train.py",
            "hyperparameters": hps,
            "searcher": {"name": "grid", "metric": "loss", "max_length": 4},
        }
    )
    assert preview_search(cfg, 1).trials == 6 * (4 + 1)
