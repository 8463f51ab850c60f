"""How config problems are reported: every problem at once, each with its path, for people."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.config import InvalidConfig, load_experiment_config
from assay.errors import AssayError


def _details(raw: Any, overrides: tuple[str, ...] = ()) -> list[str]:
    with pytest.raises(InvalidConfig) as info:
        load_experiment_config(raw, overrides=overrides)
    return [str(d) for d in info.value.details]


def _message(raw: Any) -> str:
    with pytest.raises(InvalidConfig) as info:
        load_experiment_config(raw)
    return info.value.message


def test_a_config_with_three_mistakes_gets_one_message_naming_all_three() -> None:
    raw = {
        "entrypoint": "python3 train.py",
        "searcher": {"name": "random", "metric": "loss", "max_trials": 0},
        "resources": {"slots_per_trial": "two"},
        "max_restrats": 3,
    }
    with pytest.raises(InvalidConfig) as info:
        load_experiment_config(raw)
    assert info.value.message == "invalid experiment config: 3 problems"
    assert sorted(str(d) for d in info.value.details) == [
        "max_restrats: unknown key (did you mean max_restarts?)",
        'resources.slots_per_trial: must be an integer, got "two"',
        "searcher.max_trials: must be >= 1, got 0",
    ]
    assert isinstance(info.value, AssayError) and info.value.status == 400
    text = str(info.value)
    assert "max_restrats" in text and "slots_per_trial" in text and "max_trials" in text


def test_one_problem_is_singular(minimal: dict[str, Any]) -> None:
    assert _message({**minimal, "debug": "yes"}) == "invalid experiment config: 1 problem"


def test_bound_violations_say_the_bound_and_the_value(minimal: dict[str, Any]) -> None:
    raw = {**minimal, "resources": {"priority": 100, "weight": 0}, "scheduling_unit": 0}
    assert sorted(_details(raw)) == [
        "resources.priority: must be <= 99, got 100",
        "resources.weight: must be > 0, got 0",
        "scheduling_unit: must be >= 1, got 0",
    ]


def test_unknown_key_suggests_the_closest_valid_key(minimal: dict[str, Any]) -> None:
    raw = {**minimal, "searcher": {**minimal["searcher"], "smaller_is_beter": False}}
    assert _details(raw) == [
        "searcher.smaller_is_beter: unknown key (did you mean smaller_is_better?)"
    ]


def test_unknown_key_lists_the_valid_keys_when_nothing_is_close(minimal: dict[str, Any]) -> None:
    raw = {**minimal, "reproducibility": {"zzz": 1}}
    assert _details(raw) == ["reproducibility.zzz: unknown key; valid keys are: experiment_seed"]


def test_unknown_key_inside_a_list_item_and_a_hyperparameter(minimal: dict[str, Any]) -> None:
    raw = {
        **minimal,
        "bind_mounts": [{"host_path": "/a", "container_path": "/a", "readonly": True}],
        "hyperparameters": {"n": {"type": "int", "minval": 1, "maxval": 2, "cout": 2}},
    }
    assert _details(raw) == [
        "hyperparameters.n.cout: unknown key (did you mean count?)",
        "bind_mounts[0].readonly: unknown key (did you mean read_only?)",
    ]


def test_missing_required_keys_say_required() -> None:
    assert _details({"searcher": {"name": "random", "max_trials": 2}}) == [
        "entrypoint: required",
        "searcher.metric: required",
    ]


def test_wrong_types_name_the_expected_type_and_the_value(minimal: dict[str, Any]) -> None:
    raw = {
        **minimal,
        "labels": ["a", 3],
        "max_restarts": 1.5,
        "perform_initial_validation": "true",
        "data": [1],
        "name": 12,
    }
    assert sorted(_details(raw)) == [
        "data: must be a map, got [1]",
        "labels[1]: must be a string, got 3",
        "max_restarts: must be an integer, got 1.5",
        "name: must be a string, got 12",
        'perform_initial_validation: must be true or false, got "true"',
    ]


def test_choices_list_the_accepted_values(minimal: dict[str, Any]) -> None:
    assert _details({**minimal, "checkpoint_policy": "some"}) == [
        "checkpoint_policy: must be one of 'best', 'all' or 'none', got \"some\""
    ]


def test_paths_carry_list_indices_and_no_union_tags(minimal: dict[str, Any]) -> None:
    raw = {
        **minimal,
        "hyperparameters": {
            "outer": {"inner": {"type": "categorical", "vals": []}},
            "bad": {"type": "loguniform"},
        },
        "checkpoint_storage": {"type": "s3"},
    }
    assert _details(raw) == [
        "hyperparameters.outer.inner.vals: must have at least 1 item, got []",
        'hyperparameters.bad.type: unknown hyperparameter type "loguniform"; expected one of: '
        "const, int, double, log, categorical, normal, lognormal, choice, or a map without "
        "'type' to nest hyperparameters",
        "checkpoint_storage.bucket: required",
    ]


def test_hyperparameter_range_must_not_be_reversed(minimal: dict[str, Any]) -> None:
    raw = {**minimal, "hyperparameters": {"x": {"type": "double", "minval": 2, "maxval": 1}}}
    assert _details(raw) == ["hyperparameters.x.maxval: must be >= minval (2), got 1"]


def test_schema_problems_come_before_submission_problems(minimal: dict[str, Any]) -> None:
    raw = {
        "entrypoint": "x",
        "searcher": {"name": "grid", "metric": "l", "max_concurrent_trials": -1},
        "hyperparameters": {"n": {"type": "int", "minval": 1, "maxval": 5}},
    }
    assert _details(raw) == [
        "searcher.max_concurrent_trials: must be >= 0, got -1",
        "hyperparameters.n: grid search is in use but count was not provided",
    ]


def test_a_problem_reported_by_the_schema_is_not_repeated() -> None:
    details = _details({"searcher": {"name": "single"}})
    assert details == ["entrypoint: required", "searcher.metric: required"]


def test_searcher_that_is_not_a_map(minimal: dict[str, Any]) -> None:
    assert _details({**minimal, "searcher": "random"}) == ['searcher: must be a map, got "random"']


def test_config_that_is_not_a_map() -> None:
    assert _details(["entrypoint"]) == ['must be a map of keys to values, got ["entrypoint"]']


def test_lengths_report_at_the_unit_key(minimal: dict[str, Any]) -> None:
    raw = {
        **minimal,
        "min_validation_period": {"epochs": -2},
        "min_checkpoint_period": {"batches": 1, "epochs": 1},
        "searcher": {**minimal["searcher"], "max_length": {"batches": "10"}},
    }
    assert _details(raw) == [
        'searcher.max_length.batches: must be an integer, got "10"',
        "min_validation_period.epochs: must be >= 0, got -2",
        'min_checkpoint_period: a length object must have one attribute named "batches", '
        '"records", or "epochs"',
    ]


def test_errors_serialize_for_the_api(minimal: dict[str, Any]) -> None:
    with pytest.raises(InvalidConfig) as info:
        load_experiment_config({**minimal, "max_restarts": -1})
    assert info.value.to_json() == {
        "error": {
            "type": "InvalidConfig",
            "message": "invalid experiment config: 1 problem",
            "details": [{"path": "max_restarts", "message": "must be >= 0, got -1"}],
        }
    }


# Keys without "<": the check below looks for Python's reprs ("<function ...>") in paths, and a
# key of the input's own is rightly quoted in its path.
_key_text = st.text(alphabet=st.characters(blacklist_characters="<"), max_size=5)
_junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(_key_text | st.integers(0, 3), inner)
    ),
    max_leaves=8,
)
_keys = st.sampled_from(
    [
        *("entrypoint", "searcher", "hyperparameters", "resources", "environment"),
        *("bind_mounts", "checkpoint_storage", "min_validation_period", "data", "labels", "x"),
    ]
)


@settings(max_examples=80, deadline=None)
@given(st.dictionaries(_keys, _junk, max_size=6))
def test_any_input_either_loads_or_raises_invalid_config_with_clean_paths(
    raw: dict[str, Any],
) -> None:
    try:
        load_experiment_config(raw)
    except InvalidConfig as exc:
        assert exc.details
        for detail in exc.details:
            assert "<" not in detail.path and "function" not in detail.path
            assert detail.message and "input should be" not in detail.message.lower()


def test_map_keys_must_be_strings(minimal: dict[str, Any]) -> None:
    assert _details({**minimal, "data": {1: "a"}}) == ["data: keys must be strings, got 1"]
