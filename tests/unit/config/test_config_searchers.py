"""Every searcher section: fields, defaults, and the checks made at submission."""

from __future__ import annotations

from typing import Any

import pytest

from assay.config import (
    AdaptiveASHAConfig,
    AsyncHalvingConfig,
    CurveFittingConfig,
    CustomConfig,
    ErrorDetail,
    GridConfig,
    HyperbandConfig,
    InvalidConfig,
    Length,
    MedianStopConfig,
    OptunaConfig,
    PBTConfig,
    RandomConfig,
    SamplerConfig,
    SingleConfig,
    SyncHalvingConfig,
    Unit,
    check_submittable,
    load_experiment_config,
)


def _load(searcher: dict[str, Any], **extra: Any) -> Any:
    return load_experiment_config({"entrypoint": "python3 t.py", "searcher": searcher, **extra})


def _problems(searcher: dict[str, Any], **extra: Any) -> list[str]:
    with pytest.raises(InvalidConfig) as info:
        _load(searcher, **extra)
    return [str(d) for d in info.value.details]


def test_single_takes_an_optional_max_length_in_any_unit() -> None:
    s = _load({"name": "single", "metric": "loss", "max_length": {"records": 640}}).searcher
    assert isinstance(s, SingleConfig)
    assert s.max_length == Length(unit=Unit.RECORDS, value=640)
    unitless = _load({"name": "single", "metric": "loss", "max_length": 10}).searcher
    assert unitless.max_length == Length(unit=Unit.UNITLESS, value=10)


def test_random_defaults_and_sampler() -> None:
    s = _load(
        {
            "name": "random",
            "metric": "acc",
            "smaller_is_better": False,
            "max_trials": 20,
            "sampler": {"name": "tpe", "seed": 3, "options": {"multivariate": True}},
        }
    ).searcher
    assert isinstance(s, RandomConfig)
    assert (s.max_trials, s.max_concurrent_trials, s.max_length) == (20, 16, None)
    assert s.smaller_is_better is False
    assert s.sampler == SamplerConfig(name="tpe", seed=3, options={"multivariate": True})


def test_grid_defaults() -> None:
    s = _load({"name": "grid", "metric": "loss"}).searcher
    assert isinstance(s, GridConfig)
    assert (s.max_concurrent_trials, s.max_length) == (16, None)


def test_async_halving_defaults() -> None:
    raw = {
        "name": "async_halving",
        "metric": "l",
        "num_rungs": 3,
        "max_trials": 9,
        "max_length": 90,
    }
    s = _load(raw).searcher
    assert isinstance(s, AsyncHalvingConfig)
    assert (s.divisor, s.max_concurrent_trials, s.stop_once) == (4.0, 16, False)
    assert (s.time_metric, s.max_time, s.sampler, s.early_stopping) == (None, None, None, None)


def test_adaptive_asha_defaults_and_time_bound_form() -> None:
    raw = {
        "name": "adaptive_asha",
        "metric": "validation_loss",
        "max_trials": 5,
        "time_metric": "batches",
        "max_time": 400,
    }
    s = _load(raw).searcher
    assert isinstance(s, AdaptiveASHAConfig)
    assert (s.mode, s.divisor, s.max_rungs, s.bracket_rungs) == ("standard", 4.0, 5, [])
    assert (s.max_concurrent_trials, s.stop_once, s.max_length) == (16, False, None)
    assert (s.time_metric, s.max_time) == ("batches", 400)


def test_hyperband_accepts_eta_for_divisor() -> None:
    base = {"name": "hyperband", "metric": "l", "max_length": 81}
    s = _load(base).searcher
    assert isinstance(s, HyperbandConfig)
    assert (s.divisor, s.max_trials, s.max_concurrent_trials) == (3.0, None, 16)
    assert _load({**base, "eta": 2}).searcher.divisor == 2.0
    assert _load({**base, "divisor": 5}).searcher.to_json()["divisor"] == 5.0
    assert _problems({**base, "eta": 2, "divisor": 2}) == [
        "searcher.eta: eta is another name for divisor; give one of them, not both"
    ]


@pytest.mark.parametrize("name", ["tpe", "cmaes", "qmc", "gp", "nsga2"])
def test_optuna_searchers_share_one_model(name: str) -> None:
    s = _load({"name": name, "metric": "l", "max_trials": 30}).searcher
    assert isinstance(s, OptunaConfig) and s.name == name
    assert (s.max_concurrent_trials, s.n_startup_trials, s.sampler_options) == (16, 10, {})
    assert (s.max_length, s.time_metric, s.max_time) == (None, None, None)


def test_pbt_fields() -> None:
    raw = {
        "name": "pbt",
        "metric": "l",
        "population_size": 8,
        "num_rounds": 5,
        "length_per_round": {"batches": 100},
        "replace_function": {"truncate_fraction": 0.5},
        "explore_function": {"resample_probability": 0.25, "perturb_factor": 0.2},
    }
    s = _load(raw).searcher
    assert isinstance(s, PBTConfig)
    assert s.replace_function.truncate_fraction == 0.5
    assert s.explore_function.perturb_factor == 0.2
    bad = {
        **raw,
        "length_per_round": {"batches": 0},
        "replace_function": {"truncate_fraction": 0.6},
        "explore_function": {"resample_probability": 1.5, "perturb_factor": 0},
    }
    assert _problems(bad) == [
        "searcher.length_per_round.batches: must be > 0, got 0",
        "searcher.replace_function.truncate_fraction: must be <= 0.5, got 0.6",
        "searcher.explore_function.resample_probability: must be <= 1, got 1.5",
    ]


def test_custom_searcher_reads_class_and_keeps_its_own_settings() -> None:
    raw = {"name": "custom", "metric": "l", "class": "search:Mine", "unit": "epochs", "k": [1, 2]}
    s = _load(raw).searcher
    assert isinstance(s, CustomConfig)
    assert (s.class_, s.unit) == ("search:Mine", "epochs")
    assert s.to_json() == {**raw, "smaller_is_better": True}


def test_custom_searcher_needs_a_metric_only_at_submission() -> None:
    assert _problems({"name": "custom"}) == ["searcher.metric: required"]


@pytest.mark.parametrize(
    ("rule", "model"),
    [
        ({"name": "medianstop"}, MedianStopConfig),
        ({"name": "curvefitting", "epoch_num": 20}, CurveFittingConfig),
    ],
)
def test_early_stopping_rules(rule: dict[str, Any], model: type) -> None:
    s = _load({"name": "random", "metric": "l", "max_trials": 2, "early_stopping": rule}).searcher
    assert isinstance(s.early_stopping, model)


def test_early_stopping_defaults() -> None:
    median = MedianStopConfig(name="medianstop")
    assert (median.start_step, median.min_trials) == (0, 3)
    curve = CurveFittingConfig(name="curvefitting", epoch_num=10)
    assert (curve.start_step, curve.threshold, curve.gap) == (6, 0.95, 1)


def test_early_stopping_is_refused_where_it_does_not_apply() -> None:
    problems = _problems({"name": "grid", "metric": "l", "early_stopping": {"name": "medianstop"}})
    assert problems == [
        "searcher.early_stopping: unknown key; valid keys are: max_concurrent_trials, "
        "max_length, max_trials, metric, name, smaller_is_better, source_checkpoint_uuid, "
        "source_trial_id"
    ]


def test_unknown_early_stopping_rule_lists_the_known_ones() -> None:
    problems = _problems(
        {"name": "single", "metric": "l", "early_stopping": {"name": "assessor9000"}}
    )
    assert problems == [
        'searcher.early_stopping.name: unknown early stopping rule "assessor9000"; '
        "expected one of: medianstop, curvefitting"
    ]


@pytest.mark.parametrize("name", ["async_halving", "adaptive_asha", "hyperband"])
def test_length_driven_searchers_need_a_length_or_a_time_budget(name: str) -> None:
    raw = {"name": name, "metric": "l", "max_trials": 4, "num_rungs": 2}
    if name != "async_halving":
        del raw["num_rungs"]
    assert _problems(raw) == [
        f"searcher: the {name} searcher needs max_length, or time_metric and max_time, to know "
        "how long trials may train"
    ]
    both = {**raw, "max_length": 100, "time_metric": "batches", "max_time": 100}
    assert _problems(both) == [
        "searcher.max_length: give either max_length, or time_metric and max_time, not both"
    ]
    assert _problems({**raw, "time_metric": "batches"}) == [
        "searcher.max_time: required when time_metric is set"
    ]
    assert _problems({**raw, "max_time": 10}) == [
        "searcher.time_metric: required when max_time is set"
    ]


def test_optuna_searchers_may_run_without_a_length_but_not_with_half_a_time_budget() -> None:
    assert _load({"name": "tpe", "metric": "l", "max_trials": 3}).searcher.max_length is None
    assert _problems({"name": "tpe", "metric": "l", "max_trials": 3, "max_time": 5}) == [
        "searcher.time_metric: required when max_time is set"
    ]


@pytest.mark.parametrize(
    "searcher",
    [
        {"name": "sync_halving", "max_length": 100, "num_rungs": 3, "budget": {"epochs": 1}},
        {"name": "adaptive", "max_length": 100, "budget": {"batches": 1000}},
        {"name": "adaptive_simple", "max_length": 100, "max_trials": 9},
    ],
)
def test_end_of_life_searchers_parse_but_are_refused_naming_adaptive_asha(
    searcher: dict[str, Any],
) -> None:
    problems = _problems({**searcher, "metric": "loss"})
    assert len(problems) == 1
    assert problems[0].startswith("searcher.name: the ")
    assert "use adaptive_asha instead" in problems[0]


def test_sync_halving_has_determined_defaults() -> None:
    s = SyncHalvingConfig.model_validate(
        {"name": "sync_halving", "metric": "l", "max_length": 10, "num_rungs": 2, "budget": 5}
    )
    assert (s.divisor, s.train_stragglers) == (4.0, True)


def test_check_submittable_is_empty_for_a_good_config() -> None:
    cfg = _load({"name": "adaptive_asha", "metric": "l", "max_trials": 4, "max_length": 10})
    assert check_submittable(cfg) == []


def test_check_submittable_reports_grid_counts_with_nested_and_list_paths() -> None:
    hps = {
        "lr": {"type": "log", "minval": -4, "maxval": -1, "count": 3},
        "dict_hparam": {
            "double_hparam": {"type": "double", "minval": 1, "maxval": 10, "count": 2},
            "log_hparam": {"type": "log", "minval": 1, "maxval": 10, "base": 1},
        },
        "list_hparam": [
            10,
            {"type": "const", "val": "a"},
            {"type": "int", "minval": 1, "maxval": 2},
        ],
        "cat": {"type": "categorical", "vals": [1, 2]},
    }
    cfg = load_experiment_config(
        {"entrypoint": "x", "searcher": {"name": "random", "metric": "l", "max_trials": 1}}
        | {"hyperparameters": hps}
    )
    assert check_submittable(cfg) == []
    grid = cfg.model_copy(update={"searcher": GridConfig(name="grid", metric="l")})
    assert check_submittable(grid) == [
        ErrorDetail(
            "hyperparameters.dict_hparam.log_hparam",
            "grid search is in use but count was not provided",
        ),
        ErrorDetail(
            "hyperparameters.list_hparam[2]", "grid search is in use but count was not provided"
        ),
    ]


def test_unknown_searcher_name_lists_the_valid_names() -> None:
    problems = _problems({"name": "bayes", "metric": "l"})
    assert problems[0].startswith('searcher.name: unknown searcher "bayes"; expected one of: ')
    for name in ("single", "random", "grid", "adaptive_asha", "tpe", "pbt", "custom"):
        assert name in problems[0]


def test_missing_searcher_name_says_it_is_required() -> None:
    assert _problems({"metric": "l"})[0].startswith("searcher.name: required (one of: single,")
