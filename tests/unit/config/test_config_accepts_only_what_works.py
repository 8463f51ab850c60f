"""Values a config used to take and then did nothing with, or did something else with, are
refused at submission with their path (found by the reliability run's hostile corpus)."""

from __future__ import annotations

from typing import Any

import pytest

from assay.config import InvalidConfig, load_experiment_config

BASE: dict[str, Any] = {
    "entrypoint": "python3 train.py",
    "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 5}},
}


def _refused(**extra: Any) -> list[tuple[str, str]]:
    with pytest.raises(InvalidConfig) as refused:
        load_experiment_config({**BASE, **extra})
    return [(d.path, d.message) for d in refused.value.details]


def test_a_searcher_length_in_a_unit_must_be_more_than_zero_as_in_determined() -> None:
    searcher = {**BASE["searcher"], "max_length": {"batches": 0}}
    assert _refused(searcher=searcher) == [("searcher.max_length.batches", "must be > 0, got 0")]
    # Determined 0.38's bare integer lengths may be 0 (a time_metric's count starts there).
    load_experiment_config({**BASE, "searcher": {**BASE["searcher"], "max_length": 0}})


def test_an_environment_variable_needs_a_name() -> None:
    assert _refused(environment={"environment_variables": ["=value"]}) == [
        (
            "environment.environment_variables[0]",
            "has no variable name before '=', got \"=value\"; write NAME=VALUE",
        )
    ]


@pytest.mark.parametrize(
    ("storage", "key", "says"),
    [
        ({"type": "s3", "bucket": "b", "endpoint_url": "file:///etc"}, "endpoint_url", "http(s)"),
        (
            {"type": "s3", "bucket": "b", "endpoint_url": "http://k:s@h:9000"},
            "endpoint_url",
            "user",
        ),
        ({"type": "azure", "container": "c", "account_url": "ftp://h"}, "account_url", "http(s)"),
    ],
)
def test_an_object_stores_server_is_an_http_url_without_keys_in_it(
    storage: dict[str, str], key: str, says: str
) -> None:
    ((path, message),) = _refused(checkpoint_storage=storage)
    assert path == f"checkpoint_storage.{key}" and says in message
