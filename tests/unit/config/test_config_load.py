"""Reading configs: YAML text and ``--config key.path=value`` overrides."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.config import (
    ConstHP,
    InvalidConfig,
    apply_overrides,
    load_experiment_config,
    parse_yaml,
)


def test_parse_yaml_names_file_line_and_column() -> None:
    text = "name: x\nsearcher:\n  name: single\n   metric: loss\n"
    with pytest.raises(InvalidConfig) as info:
        parse_yaml(text, "exp.yaml")
    assert info.value.message.startswith("invalid YAML in exp.yaml at line 4, column ")
    assert info.value.details[0].path.startswith("exp.yaml:4:")


def test_parse_yaml_refuses_a_key_given_twice() -> None:
    with pytest.raises(InvalidConfig) as info:
        parse_yaml("searcher:\n  metric: a\n  metric: b\n", "exp.yaml")
    assert "line 3" in info.value.message
    assert "'metric' is given twice (first on line 2)" in info.value.message


def test_parse_yaml_lets_merge_keys_be_overridden() -> None:
    text = "base: &b {metric: a, name: single}\nsearcher:\n  <<: *b\n  metric: c\n"
    assert parse_yaml(text, "x.yaml")["searcher"] == {"metric": "c", "name": "single"}


def test_parse_yaml_reads_numbers_and_dates_as_determined_does() -> None:
    data = parse_yaml("lr: 1e-3\nbig: 2E5\nwhen: 2024-01-02\nint: 7\nf: .5\n", "x.yaml")
    assert data == {"lr": 0.001, "big": 200000.0, "when": "2024-01-02", "int": 7, "f": 0.5}


def test_parse_yaml_of_empty_text_is_none() -> None:
    assert parse_yaml("", "empty.yaml") is None


def test_overrides_set_scalars_and_flow_maps(minimal: dict[str, Any]) -> None:
    raw = {**minimal, "searcher": {"name": "random", "metric": "l", "max_trials": 2}}
    cfg = load_experiment_config(
        raw,
        overrides=[
            "searcher.max_trials=4",
            "hyperparameters.lr={type: const, val: 0.1}",
            "resources.slots_per_trial=2",
            "description=baseline = no augmentation",
        ],
    )
    assert cfg.searcher.max_trials == 4
    assert cfg.hyperparameters["lr"] == ConstHP(val=0.1)
    assert cfg.resources.slots_per_trial == 2
    assert cfg.description == "baseline = no augmentation"


def test_overrides_create_intermediate_maps_and_leave_the_input_alone(
    minimal: dict[str, Any],
) -> None:
    before = copy.deepcopy(minimal)
    out = apply_overrides(minimal, ["data.loader.workers=4", "searcher.metric=acc"])
    assert out["data"] == {"loader": {"workers": 4}}
    assert out["searcher"]["metric"] == "acc"
    assert minimal == before


def test_overrides_index_existing_lists(minimal: dict[str, Any]) -> None:
    raw = {**minimal, "bind_mounts": [{"host_path": "/a", "container_path": "/a"}]}
    out = apply_overrides(raw, ["bind_mounts[0].read_only=true"])
    assert out["bind_mounts"][0]["read_only"] is True


def test_override_to_null_makes_a_key_absent(minimal: dict[str, Any]) -> None:
    cfg = load_experiment_config({**minimal, "max_restarts": 1}, overrides=["max_restarts=null"])
    assert cfg.max_restarts == 5


def test_malformed_overrides_are_reported_together(minimal: dict[str, Any]) -> None:
    with pytest.raises(InvalidConfig) as info:
        apply_overrides(
            minimal,
            ["searcher.max_trials", "=3", "a..b=1", "entrypoint.x=1", "bind_mounts[2].x=1"],
        )
    assert info.value.message == "invalid --config overrides: 5 problems"
    assert [str(d) for d in info.value.details] == [
        "--config searcher.max_trials: must be key.path=value (no '=' found)",
        "--config =3: must be key.path=value with a path such as searcher.max_trials",
        "--config a..b=1: must be key.path=value with a path such as searcher.max_trials",
        '--config entrypoint.x=1: entrypoint is "python3 train.py", not a map, so x cannot be '
        "set in it",
        "--config bind_mounts[2].x=1: bind_mounts is not a list, so [2] cannot be set",
    ]


def test_override_with_bad_yaml_value_is_reported(minimal: dict[str, Any]) -> None:
    with pytest.raises(InvalidConfig) as info:
        apply_overrides(minimal, ["data={a: [1"])
    assert info.value.details[0].path == "--config data={a: [1"
    assert "invalid YAML" in info.value.details[0].message


def test_override_problems_come_first_in_one_message(minimal: dict[str, Any]) -> None:
    with pytest.raises(InvalidConfig) as info:
        load_experiment_config(minimal, overrides=["oops", "max_restarts=-1"])
    assert [str(d) for d in info.value.details] == [
        "--config oops: must be key.path=value (no '=' found)",
        "max_restarts: must be >= 0, got -1",
    ]


_segment = st.text("abcxyz_", min_size=1, max_size=4)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(_segment, min_size=1, max_size=4),
    st.none() | st.booleans() | st.integers() | st.text("abc -:", min_size=1, max_size=6),
)
def test_an_override_puts_its_value_at_its_path(path: list[str], value: Any) -> None:
    text = "null" if value is None else repr(value) if isinstance(value, str) else str(value)
    if isinstance(value, bool):
        text = str(value).lower()
    out = apply_overrides({"keep": 1}, [f"{'.'.join(path)}={text}"])
    node: Any = out
    for part in path:
        node = node[part]
    assert node == value
    assert out.get("keep") == 1 or path[0] == "keep"


OPENPAI_V2 = {
    "protocolVersion": 2,
    "name": "hello",
    "type": "job",
    "taskRoles": {"worker": {"instances": 1, "commands": ["echo hi"]}},
}
BASE_CONFIG: dict[str, Any] = {
    "entrypoint": "python3 train.py",
    "searcher": {"name": "single", "metric": "loss", "max_length": 1},
}
OPENPAI_V1 = {"jobName": "hello", "taskRoles": [{"name": "worker", "command": "echo hi"}]}


@pytest.mark.parametrize("raw", [OPENPAI_V2, OPENPAI_V1], ids=["v2", "v1"])
def test_an_openpai_job_is_refused_in_one_line_that_says_to_submit_it_as_a_job(
    raw: dict[str, Any],
) -> None:
    with pytest.raises(InvalidConfig) as info:
        load_experiment_config(raw)
    assert info.value.message == (
        "this config is an OpenPAI job, not an experiment config: "
        "submit it with `assay job submit <file>`"
    )
    assert info.value.details == []


def test_the_list_of_valid_keys_is_written_once_however_many_keys_are_unknown() -> None:
    raw = {**BASE_CONFIG, "foo": 1, "bar": 2, "baz": 3}
    with pytest.raises(InvalidConfig) as info:
        load_experiment_config(raw)
    messages = [d.message for d in info.value.details]
    assert len(messages) == 3
    assert messages[0].startswith("unknown key; valid keys are: adaptdl, ")
    assert messages[1:] == ["unknown key (the valid keys are listed above)"] * 2


def test_a_determined_task_config_is_told_apart_at_the_missing_searcher() -> None:
    with pytest.raises(InvalidConfig) as info:
        load_experiment_config({"entrypoint": "python3 train.py", "resources": {"slots": 1}})
    [detail] = info.value.details
    assert detail.path == "searcher"
    assert "looks like a Determined command or task config" in detail.message
    assert "assay job submit" in detail.message


def test_a_missing_searcher_with_hyperparameters_is_plainly_required() -> None:
    raw = {"entrypoint": "python3 train.py", "hyperparameters": {"lr": 0.1}}
    with pytest.raises(InvalidConfig) as info:
        load_experiment_config(raw)
    assert [str(d) for d in info.value.details] == ["searcher: required"]
