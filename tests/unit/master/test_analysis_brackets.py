"""Searcher progress as the API shows it: the planned trials of each bracket beside what was
counted, and rung results in the metric's own sign."""

from __future__ import annotations

from typing import Any

from assay.config import load_experiment_config
from assay.master.reads._analysis import _brackets, _max_trials
from assay.searcher import Create, make_searcher


def _config(searcher: dict[str, Any]) -> Any:
    return load_experiment_config(
        {
            "entrypoint": "python3 train.py",
            "hyperparameters": {"x": {"type": "double", "minval": 0, "maxval": 1}},
            "searcher": {"metric": "accuracy", "max_length": {"batches": 8}, **searcher},
        }
    )


def test_a_larger_is_better_metric_shows_its_best_as_reported() -> None:
    config = _config(
        {
            "name": "async_halving",
            "num_rungs": 2,
            "divisor": 2,
            "max_trials": 2,
            "smaller_is_better": False,
        }
    )
    searcher = make_searcher(config, 5)
    ids = [op.request_id for op in searcher.initial_operations() if isinstance(op, Create)]
    searcher.validation_completed(ids[0], 0.7, 4)
    searcher.validation_completed(ids[1], 0.9, 4)
    (bracket,) = _brackets(config, 5, searcher.snapshot()["method"])
    assert bracket.max_trials == 2 and bracket.trials == 2
    assert bracket.rungs[0].best == 0.9, "the largest accuracy, not its negation"


def test_adaptive_asha_brackets_carry_their_planned_trials() -> None:
    config = _config({"name": "adaptive_asha", "max_trials": 16, "mode": "standard"})
    searcher = make_searcher(config, 1)
    searcher.initial_operations()
    brackets = _brackets(config, 1, searcher.snapshot()["method"])
    assert len(brackets) > 1
    assert sum(b.max_trials or 0 for b in brackets) == 16 == _max_trials(config)


def test_searchers_without_rungs_and_grids_say_what_they_plan() -> None:
    grid = load_experiment_config(
        {
            "entrypoint": "python3 train.py",
            "hyperparameters": {"x": {"type": "int", "minval": 0, "maxval": 4, "count": 5}},
            "searcher": {"name": "grid", "metric": "loss"},
        }
    )
    assert _max_trials(grid) == 5
    assert _brackets(grid, 0, {"created": 1}) == []
