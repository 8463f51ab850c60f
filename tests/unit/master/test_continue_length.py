"""``experiment continue`` is refused when the trial's checkpoint already reached the length the
new experiment would train to: it would run and complete having trained nothing."""

from __future__ import annotations

import pytest

from assay.config import ExperimentConfig, load_experiment_config
from assay.master.experiments._derive import length_problem


def _config(max_length: object, *overrides: str) -> ExperimentConfig:
    raw = {
        "name": "c",
        "entrypoint": "python3 train.py",
        "searcher": {"name": "single", "metric": "loss", "max_length": max_length},
    }
    return load_experiment_config(raw, overrides=overrides)


def test_a_trial_at_its_max_length_is_refused_naming_the_override_in_its_unit() -> None:
    config = _config({"batches": 3000})
    assert length_problem(config, 63, 3000) == (
        "trial 63 already trained 3000 batches, its searcher.max_length; "
        "give a longer one: --config searcher.max_length.batches=N"
    )


@pytest.mark.parametrize(
    ("max_length", "key"),
    [
        ({"epochs": 3}, "searcher.max_length.epochs"),
        ({"records": 3}, "searcher.max_length.records"),
    ],
)
def test_the_override_named_is_in_the_configs_unit(max_length: object, key: str) -> None:
    problem = length_problem(_config(max_length), 1, 3)
    assert problem is not None and problem.endswith(f"--config {key}=N")


def test_a_shorter_override_than_the_trained_length_is_refused() -> None:
    config = _config({"batches": 3000}, "searcher.max_length.batches=2000")
    problem = length_problem(config, 63, 3000)
    assert problem is not None and "past its searcher.max_length of 2000 batches" in problem


def test_a_longer_override_is_accepted() -> None:
    config = _config({"batches": 3000}, "searcher.max_length.batches=6000")
    assert length_problem(config, 63, 3000) is None
