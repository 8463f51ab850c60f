"""Absurd values are refused at validation, each naming its field and the limit: integers the
database cannot store, NaN and infinities, names and texts past sane lengths, searches too big for
the master, values JSON cannot carry."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from assay.config import (
    DEFAULT_MAX_GRID_POINTS,
    InvalidConfig,
    MasterConfig,
    hyperband_trials,
    load_experiment_config,
    load_master_config,
    parse_yaml,
)


def problems(raw: Any, overrides: tuple[str, ...] = (), **kwargs: Any) -> list[str]:
    with pytest.raises(InvalidConfig) as info:
        load_experiment_config(raw, overrides=overrides, **kwargs)
    return [str(d) for d in info.value.details]


def with_(minimal: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """``minimal`` with ``value`` at the dotted ``path``."""
    raw = copy.deepcopy(minimal)
    node = raw
    *parents, last = path.split(".")
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value
    return raw


def searcher(**fields: Any) -> dict[str, Any]:
    return {"metric": "loss", **fields}


def yaml_config(text: str) -> Any:
    base = "entrypoint: python3 train.py\nsearcher: {name: single, metric: loss}\n"
    return parse_yaml(base + text, "exp.yaml")


# -- integers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("searcher", searcher(name="random", max_trials=10**9), "must be <= 1,000,000"),
        (
            "searcher",
            searcher(name="random", max_trials=2, max_concurrent_trials=10**6),
            "<= 1,000",
        ),
        ("resources.slots_per_trial", 10**12, "must be <= 65,536, got 1000000000000"),
        ("resources.max_slots", 2**40, "must be <= 2,147,483,647"),
        ("max_restarts", 2**63, "must be <= 2,147,483,647"),
        ("reproducibility.experiment_seed", 2**40, "must be <= 2,147,483,647"),
        ("records_per_epoch", -(2**70), "must be >= 0"),
        ("min_validation_period", {"batches": 2**40}, "must be <= 2,147,483,647 (the longest"),
        ("scheduling_unit", 2**31, "must be <= 2,147,483,647"),
        ("profiling.end_after_batch", 2**64, "must be <= 2,147,483,647"),
        ("resources.shm_size", "9" * 30 + " pb", "must be a memory size under 8 EiB"),
    ],
)
def test_an_integer_out_of_range_is_refused_naming_its_field(
    minimal: dict[str, Any], path: str, value: Any, message: str
) -> None:
    found = problems(with_(minimal, path, value))
    assert len(found) == 1
    where = "searcher.max_" if path == "searcher" else path
    assert found[0].startswith(where) and message in found[0]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("max_length", {"batches": 2**31}, "must be <= 2,147,483,647 (the longest"),
        ("max_time", 2**40, "must be <= 2,147,483,647"),
        ("num_rungs", 10**6, "must be <= 32"),
        ("divisor", 1e6, "must be <= 1,000"),
        ("bracket_rungs", [1] * 40, "must have at most 32 items, got 40"),
        ("source_trial_id", 2**63, "must be <= 2,147,483,647"),
    ],
)
def test_a_searcher_setting_out_of_range_is_refused_naming_it(
    minimal: dict[str, Any], field: str, value: Any, message: str
) -> None:
    sc = searcher(name="adaptive_asha", max_trials=4, max_length=100)
    if field == "num_rungs":
        sc["name"] = "async_halving"
    if field == "max_time":
        sc = {**sc, "time_metric": "batches"}
        del sc["max_length"]
    found = problems({**minimal, "searcher": {"num_rungs": 2, **sc, field: value}})
    assert any(p.startswith(f"searcher.{field}") and message in p for p in found), found


def test_sampler_seeds_stay_within_what_numpy_takes(minimal: dict[str, Any]) -> None:
    sc = searcher(name="random", max_trials=2, sampler={"name": "tpe", "seed": 2**32})
    assert problems({**minimal, "searcher": sc}) == [
        "searcher.sampler.seed: must be <= 4,294,967,295, got 4294967296"
    ]


def test_an_integer_outside_64_bits_anywhere_is_refused(minimal: dict[str, Any]) -> None:
    raw = {**minimal, "data": {"batch": {"size": 2**64}}, "hyperparameters": {"k": 2**70}}
    assert problems(raw) == [
        "data.batch.size: must fit in 64 bits (-9,223,372,036,854,775,808 to "
        "9,223,372,036,854,775,807), got an integer of 65 bits",
        "hyperparameters.k: must fit in 64 bits (-9,223,372,036,854,775,808 to "
        "9,223,372,036,854,775,807), got an integer of 71 bits",
    ]


# -- NaN and infinities -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (
            "hyperparameters: {x: {type: double, minval: .nan, maxval: 1}}",
            "hyperparameters.x.minval",
        ),
        (
            "hyperparameters: {x: {type: double, minval: 0, maxval: .inf}}",
            "hyperparameters.x.maxval",
        ),
        ("hyperparameters: {x: {type: log, minval: -.inf, maxval: 1}}", "hyperparameters.x.minval"),
        (
            "hyperparameters: {x: {type: log, minval: 1, maxval: 2, base: .nan}}",
            "hyperparameters.x.base",
        ),
        ("hyperparameters: {x: .nan}", "hyperparameters.x"),
        ("hyperparameters: {x: {type: const, val: [1, .inf]}}", "hyperparameters.x.val[1]"),
        ("hyperparameters: {x: {type: categorical, vals: [1, .nan]}}", "hyperparameters.x.vals[1]"),
        ("resources: {weight: .inf}", "resources.weight"),
        ("data: {lr: -.inf}", "data.lr"),
        ("searcher: {name: random, metric: l, max_trials: 2, divisor: .nan}", "searcher.divisor"),
    ],
)
def test_nan_and_infinite_values_are_refused_naming_the_field(text: str, where: str) -> None:
    if text.startswith("searcher"):
        text = text.replace("random", "async_halving").replace("divisor", "num_rungs: 2, divisor")
        raw = {**yaml_config(""), **parse_yaml(text, "x")}
        raw["searcher"]["max_length"] = 10
    else:
        raw = yaml_config(text)
    found = problems(raw)
    assert len(found) == 1, found
    assert found[0].startswith(f"{where}: must be a finite number, got ")


def test_a_double_range_wider_than_a_float_is_refused(minimal: dict[str, Any]) -> None:
    hp = {"type": "double", "minval": -1e308, "maxval": 1e308}
    assert problems({**minimal, "hyperparameters": {"x": hp}}) == [
        "hyperparameters.x.maxval: maxval - minval (1e+308 - -1e+308) is beyond the range of a "
        "float"
    ]


def test_a_log_range_whose_powers_overflow_is_refused(minimal: dict[str, Any]) -> None:
    hp = {"type": "log", "minval": -3, "maxval": 400}
    assert problems({**minimal, "hyperparameters": {"x": hp}}) == [
        "hyperparameters.x.maxval: base ** maxval (10.0 ** 400) is beyond the range of a float"
    ]


# -- values JSON cannot carry ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("data: {blob: !!binary aGVsbG8=}", "bytes"),
        ("data: {when: !!timestamp 2001-12-14}", "date"),
        ("data: {ids: !!set {a, b}}", "set"),
        ("data: {pairs: !!omap [{a: 1}]}", "tuple"),
    ],
)
def test_yaml_only_types_are_refused(text: str, kind: str) -> None:
    found = problems(yaml_config(text))
    assert len(found) >= 1
    assert (
        f"got a value of YAML type {kind}" in found[0] or f"a key of YAML type {kind}" in found[0]
    )


def test_a_lone_surrogate_is_refused(minimal: dict[str, Any]) -> None:
    raw = yaml_config('description: "ok \\ud800"')
    raw["data"] = {"note": "\udfff"}
    assert problems(raw) == [
        "data.note: must be valid Unicode text: holds the lone surrogate \\udfff, which cannot "
        "be stored",
        "description: must be valid Unicode text: lone surrogates such as \\ud800 cannot be "
        'stored, got "ok \\ud800"',
    ]


# -- names and texts --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("name", "n" * 20_000_000, "name: must have at most 256 characters, got 20,000,000"),
        ("description", "d" * 9000, "description: must have at most 8,192 characters, got 9,000"),
        ("labels", ["l"] * 101, "labels: must have at most 100 items, got 101"),
        ("labels", ["ok", "l" * 300], "labels[1]: must have at most 256 characters, got 300"),
        ("workspace", "w" * 257, "workspace: must have at most 256 characters, got 257"),
        ("entrypoint", "x" * 40_000, "entrypoint: must have at most 32,768 characters in all"),
        ("entrypoint", ["python3"] + ["a" * 1000] * 40, "must have at most 32,768 characters"),
        ("resources.resource_pool", "p" * 1000, "must have at most 256 characters, got 1,000"),
        (
            "checkpoint_storage",
            {"type": "shared_fs", "host_path": "/" + "d" * 5000},
            "checkpoint_storage.host_path: must have at most 4,096 characters, got 5,001",
        ),
    ],
)
def test_texts_past_their_limits_are_refused_naming_the_field_and_the_limit(
    minimal: dict[str, Any], path: str, value: Any, message: str
) -> None:
    found = problems(with_(minimal, path, value))
    assert len(found) == 1 and message in found[0], found


def test_hyperparameter_names_past_the_limit_are_refused(minimal: dict[str, Any]) -> None:
    raw = {**minimal, "hyperparameters": {"outer": {"y" * 300: 1}}}
    found = problems(raw)
    assert found[0].startswith(
        "hyperparameters.outer: names may have at most 256 characters, got one of 300 "
    )


def test_a_metric_name_past_the_limit_is_refused(minimal: dict[str, Any]) -> None:
    raw = {**minimal, "searcher": searcher(name="single", metric="m" * 300)}
    assert problems(raw) == ["searcher.metric: must have at most 256 characters, got 300"]


# -- the size of the search -------------------------------------------------------------------


def grid_config(minimal: dict[str, Any], counts: list[int], **sc: Any) -> dict[str, Any]:
    hps = {
        f"h{i}": {"type": "double", "minval": 0, "maxval": 1, "count": n}
        for i, n in enumerate(counts)
    }
    return {**minimal, "searcher": searcher(name="grid", **sc), "hyperparameters": hps}


def test_a_grid_over_the_masters_limit_is_counted_and_refused(minimal: dict[str, Any]) -> None:
    raw = grid_config(minimal, [10**6, 10**6])
    assert problems(raw, max_grid_points=DEFAULT_MAX_GRID_POINTS) == [
        "hyperparameters: the grid has 1,000,000,000,000 points, over the limit of 100,000 "
        "(this master's limit; its limits.max_grid_points setting raises it); lower the "
        "hyperparameters' counts"
    ]


def test_without_a_master_limit_a_grid_is_held_to_the_absolute_one(
    minimal: dict[str, Any],
) -> None:
    assert load_experiment_config(grid_config(minimal, [1000, 200])).searcher.name == "grid"
    found = problems(grid_config(minimal, [1000, 1001]))
    assert found == [
        "hyperparameters: the grid has 1,001,000 points, over the limit of 1,000,000 (the most "
        "any master accepts); lower the hyperparameters' counts"
    ]


def test_an_int_grid_counts_the_integers_its_range_holds(minimal: dict[str, Any]) -> None:
    raw = {
        **minimal,
        "searcher": searcher(name="grid"),
        "hyperparameters": {"k": {"type": "int", "minval": 1, "maxval": 10, "count": 10**12}},
    }
    assert load_experiment_config(raw, max_grid_points=10).searcher.name == "grid"
    assert "the grid has 10 points, over the limit of 9" in problems(raw, max_grid_points=9)[0]


def test_no_limit_counts_for_a_grid_whose_counts_are_missing(minimal: dict[str, Any]) -> None:
    raw = grid_config(minimal, [10**9])
    del raw["hyperparameters"]["h0"]["count"]
    assert problems(raw, max_grid_points=5) == [
        "hyperparameters.h0: grid search is in use but count was not provided"
    ]


def test_no_limit_of_concurrency_is_refused_when_it_would_start_too_many_trials(
    minimal: dict[str, Any],
) -> None:
    raw = {**minimal, "searcher": searcher(name="random", max_trials=5000, max_concurrent_trials=0)}
    assert problems(raw) == [
        "searcher.max_concurrent_trials: 0 (no limit) would let all 5,000 trials start at once; "
        "at most 1,000 may: give a number up to that"
    ]
    ok = {**minimal, "searcher": searcher(name="random", max_trials=500, max_concurrent_trials=0)}
    assert load_experiment_config(ok).searcher.max_concurrent_trials == 0


def test_a_grid_with_no_concurrency_limit_counts_its_points(minimal: dict[str, Any]) -> None:
    raw = grid_config(minimal, [50, 50], max_concurrent_trials=0)
    assert problems(raw)[0].startswith(
        "searcher.max_concurrent_trials: 0 (no limit) would let all 2,500 trials start at once"
    )


def test_hyperband_with_a_divisor_near_one_is_refused_by_its_rungs(
    minimal: dict[str, Any],
) -> None:
    sc = searcher(name="hyperband", divisor=1.0001, max_length=10**6)
    assert problems({**minimal, "searcher": sc}) == [
        "searcher.divisor: hyperband would plan 138163 rungs (log of the length 1,000,000 to the "
        "base divisor 1.0001); at most 32: raise divisor"
    ]


def test_hyperband_without_max_trials_is_refused_when_it_would_start_too_many(
    minimal: dict[str, Any],
) -> None:
    sc = searcher(name="hyperband", divisor=2, max_length=2**30)
    planned = hyperband_trials(2**30, 2)
    assert planned > 1_000_000
    assert problems({**minimal, "searcher": sc}) == [
        f"searcher.max_trials: without max_trials, hyperband would start {planned:,} trials "
        "(over the limit of 1,000,000); give max_trials"
    ]
    accepted = load_experiment_config({**minimal, "searcher": {**sc, "max_trials": 100}})
    assert accepted.searcher.name == "hyperband"


def test_a_pbt_population_and_its_rounds_are_bounded(minimal: dict[str, Any]) -> None:
    sc = searcher(
        name="pbt",
        population_size=10**5,
        num_rounds=10**6,
        length_per_round={"batches": 10**4},
        replace_function={"truncate_fraction": 0.25},
        explore_function={"resample_probability": 0.2, "perturb_factor": 0.2},
    )
    assert problems({**minimal, "searcher": sc}) == [
        "searcher.population_size: must be <= 1,000, got 100000"
    ]
    found = problems({**minimal, "searcher": {**sc, "population_size": 10}})
    assert found == [
        "searcher.num_rounds: 1000000 rounds of 10000 batches train a trial to "
        "10,000,000,000; lengths may be at most 2,147,483,647"
    ]


def test_too_many_hyperparameters_are_refused(minimal: dict[str, Any]) -> None:
    raw = {**minimal, "hyperparameters": {f"h{i}": i for i in range(10_001)}}
    assert problems(raw) == ["hyperparameters: has 10,001 hyperparameters; at most 10,000"]


# -- structure --------------------------------------------------------------------------------


def test_a_structure_too_deep_to_validate_is_refused_before_validation(
    minimal: dict[str, Any],
) -> None:
    deep: Any = 1
    for _ in range(3000):
        deep = [deep]
    found = problems({**minimal, "data": {"x": deep}})
    assert found == [
        "data.x" + "[0]" * 62 + ": nested too deep: at most 64 levels of maps and lists"
    ]


def test_overrides_cannot_build_a_structure_too_deep(minimal: dict[str, Any]) -> None:
    path = "data." + ".".join(["a"] * 100)
    assert problems(minimal, overrides=(f"{path}=1",)) == [
        f"--config {path}=1: the path has more than 64 parts"
    ]
    nested = "data." + ".".join(["a"] * 40) + "=" + "[" * 40 + "]" * 40
    assert problems(minimal, overrides=(nested,))[0].endswith(
        "nested too deep: at most 64 levels of maps and lists"
    )


def test_overrides_over_a_configs_limit_in_all_are_refused(minimal: dict[str, Any]) -> None:
    overrides = tuple(f"data.k{i}={'x' * 3_000_000}" for i in range(3))
    assert problems(minimal, overrides=overrides) == [
        "--config: the overrides have 9,000,024 characters in all; at most 8,388,608"
    ]


# -- the master's setting ---------------------------------------------------------------------


def test_the_master_grid_limit_defaults_to_a_hundred_thousand_and_can_be_set(
    tmp_path: Any,
) -> None:
    assert MasterConfig().limits.max_grid_points == 100_000
    path = tmp_path / "master.yaml"
    path.write_text("limits:\n  max_grid_points: 500000\n")
    assert load_master_config(path).limits.max_grid_points == 500_000
    path.write_text("limits:\n  max_grid_points: 2000000\n")
    with pytest.raises(InvalidConfig) as info:
        load_master_config(path)
    assert [str(d) for d in info.value.details] == [
        "limits.max_grid_points: must be <= 1,000,000, got 2000000"
    ]
