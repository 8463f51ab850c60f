"""Determined's legacy Trial-class entrypoints (``model_def:MyTrial``) are refused when the
config is loaded, with one problem naming ``entrypoint``; commands are not mistaken for them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assay.config import InvalidConfig, MasterConfig, load_experiment_config
from assay.config._legacy import is_trial_class
from assay.master import Submission
from assay.master._submit import validate_submission
from tests.unit.master.test_submit_nul import train_context


@pytest.mark.parametrize(
    "entrypoint",
    [
        "model_def:MyTrial",
        "long.module.path.model_def:NoopPyTorchTrial",
        "  model_def:MNistTrial  ",
        "_private.mod:_Trial",
    ],
)
def test_module_colon_class_names_a_trial_class(entrypoint: str) -> None:
    assert is_trial_class(entrypoint)


@pytest.mark.parametrize(
    "entrypoint",
    [
        "python3 train.py",
        "python3 -m model_def:MyTrial",
        "model_def: MyTrial",
        "model_def :MyTrial",
        "model_def:MyTrial.fit",
        "1model:Trial",
        "model_def.:Trial",
        "pkg..mod:Trial",
        "http://host:8080",
        "sh -c 'a:b'",
        ":Trial",
        "model_def:",
        ["model_def:MyTrial"],
        None,
        7,
    ],
)
def test_commands_and_other_values_are_not_trial_classes(entrypoint: Any) -> None:
    assert not is_trial_class(entrypoint)


def test_a_trial_class_entrypoint_is_refused_with_one_line_naming_entrypoint(
    minimal: dict[str, Any],
) -> None:
    with pytest.raises(InvalidConfig) as caught:
        load_experiment_config({**minimal, "entrypoint": "model_def:MyTrial"})
    (detail,) = caught.value.details
    assert detail.path == "entrypoint"
    message = detail.message
    assert "\n" not in message
    assert "'model_def:MyTrial'" in message
    assert "PyTorchTrial" in message and "TFKerasTrial" in message
    assert "python3 train.py" in message


def test_the_refusal_comes_with_the_configs_other_problems(minimal: dict[str, Any]) -> None:
    with pytest.raises(InvalidConfig) as caught:
        load_experiment_config({**minimal, "entrypoint": "model_def:MyTrial", "max_restarts": -1})
    assert {d.path for d in caught.value.details} == {"entrypoint", "max_restarts"}


def test_a_list_entrypoint_like_a_trial_class_is_a_command_and_accepted(
    minimal: dict[str, Any],
) -> None:
    cfg = load_experiment_config({**minimal, "entrypoint": ["model_def:MyTrial"]})
    assert cfg.entrypoint == ["model_def:MyTrial"]


def test_the_master_refuses_a_trial_class_at_submission(tmp_path: Path) -> None:
    text = json.dumps(
        {
            "entrypoint": "model_def:MyTrial",
            "searcher": {"name": "single", "metric": "loss", "max_length": 1},
        }
    )
    with pytest.raises(InvalidConfig) as caught:
        validate_submission(Submission(text, train_context()), MasterConfig(), tmp_path)
    assert [d.path for d in caught.value.details] == ["entrypoint"]


def test_a_stored_experiment_with_a_trial_class_still_loads(minimal: dict[str, Any]) -> None:
    # Submitted before the refusal: the master must still load it to end it.
    cfg = load_experiment_config({**minimal, "entrypoint": "model_def:MyTrial"}, stored=True)
    assert cfg.entrypoint == "model_def:MyTrial"
