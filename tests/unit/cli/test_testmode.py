"""What ``--test-mode`` makes of an experiment config, and how it judges the trial it ran."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from assay import rest
from assay.cli._testmode import (
    TEST_BATCHES,
    compressed_config,
    judge,
    traceback_of,
    user_traceback,
)
from assay.config import load_experiment_config


def config(searcher: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "name": "mnist",
        "entrypoint": "python3 train.py",
        "hyperparameters": {
            "lr": {"type": "log", "base": 10, "minval": -4, "maxval": -1},
            "global_batch_size": 32,
        },
        "searcher": {"metric": "loss", "smaller_is_better": False, **searcher},
        "max_restarts": 3,
        "checkpoint_storage": {"type": "shared_fs", "host_path": "/srv/checkpoints"},
        **extra,
    }


def compressed(raw: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    done = compressed_config(raw, load_experiment_config(raw), "/scratch/ckpt")
    # What test mode submits is a valid config too.
    load_experiment_config(done.raw)
    return done.raw, done.notes


def test_a_search_becomes_one_single_trial_of_a_few_batches() -> None:
    raw, notes = compressed(
        config({"name": "adaptive_asha", "max_trials": 64, "max_length": {"batches": 5000}})
    )
    assert raw["searcher"] == {
        "name": "single",
        "metric": "loss",
        "smaller_is_better": False,
        "max_length": {"batches": TEST_BATCHES},
    }
    assert raw["max_restarts"] == 0
    assert raw["checkpoint_storage"] == {"type": "shared_fs", "host_path": "/scratch/ckpt"}
    assert raw["name"] == "mnist (test mode)"
    assert raw["hyperparameters"] == config({})["hyperparameters"]
    assert any("adaptive_asha replaced" in n for n in notes)


def test_a_length_shorter_than_a_few_batches_is_kept() -> None:
    raw, _ = compressed(config({"name": "single", "max_length": {"batches": 2}}))
    assert raw["searcher"]["max_length"] == {"batches": 2}


@pytest.mark.parametrize(
    ("length", "expected"),
    [
        ({"records": 60000}, {"records": TEST_BATCHES * 32}),
        ({"epochs": 10}, {"epochs": 1}),
        (1000, TEST_BATCHES),
    ],
)
def test_other_units_shrink_in_their_own_unit(length: Any, expected: Any) -> None:
    extra = {"records_per_epoch": 60000} if "epochs" in str(length) else {}
    raw, _ = compressed(config({"name": "random", "max_trials": 4, "max_length": length}, **extra))
    assert raw["searcher"]["max_length"] == expected


def test_the_original_config_is_left_unchanged() -> None:
    raw = config({"name": "random", "max_trials": 4, "max_length": {"batches": 100}})
    compressed(raw)
    assert raw["searcher"]["name"] == "random" and raw["max_restarts"] == 3


def metric(group: str, values: dict[str, Any]) -> rest.Metric:
    return rest.Metric(
        trial_id=1, run=1, group=group, steps_completed=5, metrics=values, time=0.0, archived=False
    )


def test_completed_trial_with_the_metric_passes() -> None:
    verdict = judge("COMPLETED", True, [metric("validation", {"loss": 0.1})], 1, "loss")
    assert verdict.ok and not verdict.warnings


def test_completed_trial_without_the_searcher_metric_fails() -> None:
    verdict = judge("COMPLETED", True, [metric("validation", {"acc": 0.9})], 1, "loss")
    assert not verdict.ok
    assert "no validation reported the searcher's metric 'loss'" in verdict.problems[0]


def test_no_checkpoint_is_a_warning() -> None:
    verdict = judge("COMPLETED", True, [metric("validation", {"loss": 0.1})], 0, "loss")
    assert verdict.ok and "no checkpoint" in verdict.warnings[0]


def test_errored_trial_fails() -> None:
    verdict = judge("ERROR", False, [], 0, "loss")
    assert verdict.problems == ["the trial ended ERROR"]


def test_the_last_traceback_is_found_among_log_lines() -> None:
    lines = [
        "starting",
        "Traceback (most recent call last):",
        '  File "train.py", line 3, in <module>',
        "KeyError: 'a'",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "train.py", line 5, in <module>',
        "    divide(1)",
        "ZeroDivisionError: division by zero",
        "exiting",
    ]
    assert traceback_of(lines) == lines[7:11]
    assert traceback_of(["no trouble"]) == []


RAN_IN = re.compile(r"/home/agents/[^/]+/allocations/[^/]+/code/")
ASSAY = "/venv/lib/assay/"
NNI_TB = [
    "Traceback (most recent call last):",
    '  File "/home/agents/local/allocations/1.1/code/mnist.py", line 9, in <module>',
    '    train(nni.get_next_parameter()["x"])',
    '  File "/home/agents/local/allocations/1.1/code/lib/train.py", line 6, in train',
    '    nni.report_final_result({"loss": x})',
    '  File "/venv/lib/assay/compat/shims/nni/trial.py", line 34, in report_final_result',
    "    _runtime.current().report(metric, final=True)",
    '  File "/venv/lib/assay/compat/shims/nni/_runtime.py", line 105, in report',
    "    number, metrics = _value(metric)",
    "                      ^^^^^^^^^^^^^^",
    "ValueError: final result: a dict result needs a 'default' key, got ['loss']",
]


def test_a_traceback_shows_the_users_files_and_leaves_out_assays_frames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    shown = user_traceback(NNI_TB, ran_in=RAN_IN, code_dir=tmp_path / "code", internal=[ASSAY])
    assert shown == [
        "Traceback (most recent call last):",
        '  File "code/mnist.py", line 9, in <module>',
        '    train(nni.get_next_parameter()["x"])',
        '  File "code/lib/train.py", line 6, in train',
        '    nni.report_final_result({"loss": x})',
        "  (2 frames inside assay left out)",
        "ValueError: final result: a dict result needs a 'default' key, got ['loss']",
    ]


def test_code_outside_the_working_directory_is_shown_by_its_full_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    code = tmp_path / "elsewhere"
    shown = user_traceback(NNI_TB[:5] + NNI_TB[-1:], ran_in=RAN_IN, code_dir=code, internal=[])
    assert shown[1] == f'  File "{code}/mnist.py", line 9, in <module>'
    assert shown[3] == f'  File "{code}/lib/train.py", line 6, in train'


def test_a_traceback_without_user_frames_is_kept_whole() -> None:
    inside = [NNI_TB[0], *NNI_TB[5:]]
    assert user_traceback(inside, ran_in=RAN_IN, code_dir=Path("code"), internal=[ASSAY]) == inside
    assert user_traceback([], ran_in=RAN_IN, code_dir=Path("code"), internal=[ASSAY]) == []
