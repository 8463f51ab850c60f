"""A metric name the searcher reads must name a metric: an empty one matches no report, so the
search would never learn anything. Refused at submission with the path, like any bad field."""

from __future__ import annotations

from typing import Any

import pytest

from assay.config import InvalidConfig, load_experiment_config


def _problems(searcher: dict[str, Any]) -> list[str]:
    with pytest.raises(InvalidConfig) as info:
        load_experiment_config({"entrypoint": "python3 t.py", "searcher": searcher})
    return [str(d) for d in info.value.details]


EMPTY = "must name a metric the trials report (such as loss), got an empty name"


@pytest.mark.parametrize("name", ["", "   ", "\t"])
def test_an_empty_searcher_metric_is_refused_with_its_path(name: str) -> None:
    searcher = {"name": "single", "metric": name, "max_length": 10}
    assert _problems(searcher) == [f"searcher.metric: {EMPTY}"]


def test_an_empty_time_metric_is_refused_like_the_metric() -> None:
    searcher = {
        "name": "async_halving",
        "metric": "loss",
        "num_rungs": 2,
        "max_trials": 4,
        "time_metric": "",
        "max_time": 100,
    }
    assert _problems(searcher) == [f"searcher.time_metric: {EMPTY}"]


def test_a_custom_searchers_metric_is_refused_empty_too() -> None:
    searcher = {"name": "custom", "class": "s:S", "unit": "batches", "metric": ""}
    assert _problems(searcher) == [f"searcher.metric: {EMPTY}"]


def test_a_metric_name_with_spaces_inside_is_a_name() -> None:
    searcher = {"name": "single", "metric": "val loss", "max_length": 10}
    config = load_experiment_config({"entrypoint": "python3 t.py", "searcher": searcher})
    assert config.searcher.metric == "val loss"
