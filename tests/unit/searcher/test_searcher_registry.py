"""One registry entry per searcher config class; sampler names from one list; each config's
plan (length, unit, who drives) is what the factory and the preview use."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from assay.config import (
    OPTUNA_SEARCHERS,
    SAMPLER_NAMES,
    SEARCHER_CONFIGS,
    SEARCHER_NAMES,
    ExperimentConfig,
    SearchPlan,
    load_experiment_config,
)
from assay.errors import InvalidConfig
from assay.searcher import OptunaSource, RandomSearch, make_searcher, preview_search
from assay.searcher._optuna import _SAMPLERS, check_sampler
from assay.searcher._registry import REGISTRY

HPARAMS = {"lr": {"type": "double", "minval": 0.0, "maxval": 1.0, "count": 2}, "depth": 3}


def _config(searcher: dict[str, Any], *, checked: bool = True) -> ExperimentConfig:
    raw = {"entrypoint": "x", "hyperparameters": HPARAMS, "searcher": {"metric": "l", **searcher}}
    if checked:
        return load_experiment_config(raw)
    # End-of-life searchers parse but are refused at submission; build them past that check.
    return ExperimentConfig.model_validate(raw)


PBT = {
    "name": "pbt",
    "population_size": 4,
    "num_rounds": 3,
    "length_per_round": {"batches": 50},
    "replace_function": {"truncate_fraction": 0.25},
    "explore_function": {"resample_probability": 0.2, "perturb_factor": 0.2},
}


def test_every_searcher_config_class_has_exactly_one_registry_entry() -> None:
    assert set(REGISTRY) == set(SEARCHER_CONFIGS)


def test_searcher_names_come_from_the_config_classes_in_union_order() -> None:
    assert (
        "single",
        "random",
        "grid",
        "async_halving",
        "adaptive_asha",
        "hyperband",
        *OPTUNA_SEARCHERS,
        "pbt",
        "anneal",
        "evolution",
        "batch",
        "custom",
        "sync_halving",
        "adaptive",
        "adaptive_simple",
    ) == SEARCHER_NAMES


def test_every_sampler_name_has_a_builder_and_nothing_else_does() -> None:
    assert set(_SAMPLERS) == set(SAMPLER_NAMES)
    assert set(OPTUNA_SEARCHERS) == set(SAMPLER_NAMES) - {"random"}


@pytest.mark.parametrize("name", SAMPLER_NAMES)
def test_every_sampler_name_is_accepted_as_a_sampler_section(name: str) -> None:
    package = _SAMPLERS[name].package
    if package is not None and importlib.util.find_spec(package) is None:
        with pytest.raises(InvalidConfig, match=f"needs the Python package {package!r}"):
            check_sampler(name)
        return
    searcher = make_searcher(
        _config({"name": "random", "max_trials": 2, "sampler": {"name": name}}), 1
    )
    assert isinstance(searcher.method, RandomSearch)
    assert isinstance(searcher.method.source, OptunaSource)
    assert searcher.method.source.sampler_name == name


@pytest.mark.parametrize("name", OPTUNA_SEARCHERS)
def test_every_optuna_searcher_name_builds_a_random_search_behind_its_sampler(name: str) -> None:
    package = _SAMPLERS[name].package
    if package is not None:
        pytest.importorskip(package)
    searcher = make_searcher(_config({"name": name, "max_trials": 3}), 1)
    assert isinstance(searcher.method, RandomSearch)
    assert isinstance(searcher.method.source, OptunaSource)
    assert searcher.method.source.sampler_name == name


def test_an_unknown_sampler_is_refused_naming_every_known_one() -> None:
    with pytest.raises(InvalidConfig) as info:
        check_sampler("bohb")
    assert str(info.value).endswith("expected one of: " + ", ".join(SAMPLER_NAMES))


@pytest.mark.parametrize(
    ("searcher", "plan"),
    [
        (
            {"name": "random", "max_trials": 2, "max_length": {"batches": 100}},
            SearchPlan(100, "batches", code_driven=False, longest=100),
        ),
        (
            {"name": "random", "max_trials": 2},
            SearchPlan(None, "units", code_driven=True, longest=None),
        ),
        (
            {"name": "hyperband", "max_length": 27},
            SearchPlan(27, "unitless", code_driven=False, longest=27),
        ),
        (
            {"name": "adaptive_asha", "max_trials": 4, "time_metric": "steps", "max_time": 80},
            SearchPlan(80, "steps", code_driven=True, longest=80),
        ),
        (
            {"name": "grid", "max_length": {"epochs": 2}},
            SearchPlan(2, "epochs", code_driven=False, longest=2),
        ),
        (PBT, SearchPlan(None, "batches", code_driven=False, longest=150)),
        (
            {"name": "custom", "class": "m:C", "unit": "records"},
            SearchPlan(None, "records", code_driven=False, longest=None),
        ),
    ],
)
def test_each_config_gives_its_plan(searcher: dict[str, Any], plan: SearchPlan) -> None:
    assert _config(searcher).searcher.plan() == plan


@pytest.mark.parametrize(
    "searcher",
    [
        {"name": "single", "max_length": 10},
        {"name": "single"},
        {"name": "random", "max_trials": 2, "early_stopping": {"name": "medianstop"}},
        {"name": "async_halving", "num_rungs": 2, "max_trials": 4, "max_length": 8},
        {
            "name": "async_halving",
            "num_rungs": 2,
            "max_trials": 4,
            "time_metric": "t",
            "max_time": 8,
        },
        {"name": "tpe", "max_trials": 3, "time_metric": "t", "max_time": 8},
        PBT,
    ],
)
def test_the_searcher_is_code_driven_exactly_when_its_plan_says(searcher: dict[str, Any]) -> None:
    cfg = _config(searcher)
    assert make_searcher(cfg, 3).code_driven is cfg.searcher.plan().code_driven


@pytest.mark.parametrize(
    "searcher",
    [
        {"name": "sync_halving", "max_length": 10, "num_rungs": 2, "budget": 100},
        {"name": "adaptive", "max_length": 10, "budget": 100},
        {"name": "adaptive_simple", "max_length": 10, "max_trials": 3},
    ],
)
def test_end_of_life_searchers_parse_but_do_not_build(searcher: dict[str, Any]) -> None:
    cfg = _config(searcher, checked=False)
    assert cfg.searcher.plan() == SearchPlan(10, "unitless", code_driven=False, longest=10)
    with pytest.raises(InvalidConfig, match=f"searcher {searcher['name']} reached end of life"):
        make_searcher(cfg, 1)


def test_preview_of_pbt_is_searcher_driven_and_simulates_every_round() -> None:
    preview = preview_search(_config(PBT), 2)
    assert not preview.code_driven
    assert preview.unit == "batches"
    assert max(preview.lengths) == 150
