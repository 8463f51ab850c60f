"""Determined's legacy Trial-class entrypoints (``model_def:MyTrial``) are taken, trained by
the harness, and refused only when their module is not in the context; commands are not
mistaken for them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assay.config import InvalidConfig, MasterConfig, load_experiment_config
from assay.config.determined._legacy import is_trial_class, trial_command
from assay.context import pack_context
from assay.master import Submission
from assay.master.experiments._submit import validate_submission


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


def test_a_trial_class_entrypoint_is_accepted(minimal: dict[str, Any]) -> None:
    cfg = load_experiment_config({**minimal, "entrypoint": "model_def:MyTrial"})
    assert cfg.entrypoint == "model_def:MyTrial"


def test_a_list_entrypoint_like_a_trial_class_is_a_command_and_accepted(
    minimal: dict[str, Any],
) -> None:
    cfg = load_experiment_config({**minimal, "entrypoint": ["model_def:MyTrial"]})
    assert cfg.entrypoint == ["model_def:MyTrial"]


@pytest.mark.parametrize(
    ("entrypoint", "slots", "command"),
    [
        ("model_def:MyTrial", 1, ["python3", "-m", "determined.exec.harness", "model_def:MyTrial"]),
        (
            " pkg.model_def:MyTrial ",
            2,
            [
                "python3", "-m", "determined.launch.torch_distributed",
                "python3", "-m", "determined.exec.harness", "pkg.model_def:MyTrial",
            ],
        ),
        ("python3 train.py", 2, "python3 train.py"),
        (["model_def:MyTrial"], 1, ["model_def:MyTrial"]),
    ],
)  # fmt: skip
def test_a_trial_class_is_trained_by_the_harness_one_process_per_slot(
    entrypoint: Any, slots: int, command: Any
) -> None:
    assert trial_command(entrypoint, slots) == command


def _submit(tmp_path: Path, entrypoint: str, files: dict[str, str]) -> None:
    text = json.dumps(
        {
            "entrypoint": entrypoint,
            "searcher": {"name": "single", "metric": "loss", "max_length": 1},
        }
    )
    context = tmp_path / "ctx"
    for name, body in files.items():
        (context / name).parent.mkdir(parents=True, exist_ok=True)
        (context / name).write_text(body)
    validate_submission(Submission(text, pack_context(context).data), MasterConfig(), tmp_path)


@pytest.mark.parametrize(
    ("entrypoint", "files"),
    [
        ("model_def:MyTrial", {"model_def.py": "x = 1\n"}),
        ("pkg.model_def:MyTrial", {"pkg/model_def.py": "x = 1\n"}),
        ("pkg:MyTrial", {"pkg/__init__.py": "x = 1\n"}),
    ],
)
def test_the_master_takes_a_trial_class_whose_module_is_in_the_context(
    tmp_path: Path, entrypoint: str, files: dict[str, str]
) -> None:
    _submit(tmp_path, entrypoint, files)


def test_a_trial_class_whose_module_is_missing_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(InvalidConfig) as caught:
        _submit(tmp_path, "model_def:MyTrial", {"train.py": "x = 1\n"})
    (detail,) = caught.value.details
    assert detail.path == "entrypoint"
    assert "'model_def.py', which is not in the context" in detail.message
    assert "\n" not in detail.message


def test_a_stored_experiment_with_a_trial_class_still_loads(minimal: dict[str, Any]) -> None:
    cfg = load_experiment_config({**minimal, "entrypoint": "model_def:MyTrial"}, stored=True)
    assert cfg.entrypoint == "model_def:MyTrial"
