"""Submission refuses what the master's own settings rule out: a slot request no pool could ever
meet, a grid over the master's ``limits.max_grid_points``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assay.config import MasterConfig
from assay.errors import InvalidConfig
from assay.master import Submission
from assay.master.experiments._submit import validate_submission
from tests.unit.master.test_submit_nul import train_context

PROVIDER = {
    "type": "command",
    "launch_command": "true",
    "terminate_command": "true",
    "max_instances": 4,
    "slots_per_instance": 8,
}


def settings(**pool: Any) -> MasterConfig:
    return MasterConfig.model_validate(
        {"resource_pools": [{"pool_name": "default"}, {"pool_name": "gpu", **pool}]}
    )


def config(**resources: Any) -> str:
    return json.dumps(
        {
            "entrypoint": "python3 train.py",
            "searcher": {"name": "single", "metric": "loss", "max_length": 1},
            "resources": resources,
        }
    )


def refusal(text: str, master: MasterConfig, tmp_path: Path) -> list[str]:
    with pytest.raises(InvalidConfig) as caught:
        validate_submission(Submission(text, train_context()), master, tmp_path)
    return [str(d) for d in caught.value.details]


def accepted(text: str, master: MasterConfig, tmp_path: Path) -> bool:
    return validate_submission(Submission(text, train_context()), master, tmp_path) is not None


def test_more_slots_than_the_pools_max_slots_is_refused(tmp_path: Path) -> None:
    master = settings(max_slots=16)
    assert refusal(config(resource_pool="gpu", slots_per_trial=17), master, tmp_path) == [
        "resources.slots_per_trial: asks for 17 slots a trial, but resource pool 'gpu' has at "
        "most 16 (its max_slots)"
    ]
    assert accepted(config(resource_pool="gpu", slots_per_trial=16), master, tmp_path)


def test_more_slots_than_a_provider_can_ever_start_is_refused(tmp_path: Path) -> None:
    master = settings(provider=PROVIDER)
    assert refusal(config(resource_pool="gpu", slots_per_trial=33), master, tmp_path) == [
        "resources.slots_per_trial: asks for 33 slots a trial, but resource pool 'gpu' grows to "
        "at most 32 slots (4 instances of 8 slots: its provider's max_instances and "
        "slots_per_instance)"
    ]
    assert accepted(config(resource_pool="gpu", slots_per_trial=32), master, tmp_path)


def test_a_single_node_request_bigger_than_one_instance_is_refused(tmp_path: Path) -> None:
    master = settings(provider=PROVIDER)
    text = config(resource_pool="gpu", slots_per_trial=9, is_single_node=True)
    assert refusal(text, master, tmp_path) == [
        "resources.slots_per_trial: asks for 9 slots on a single node (is_single_node), but the "
        "instances of resource pool 'gpu' have 8 slots each (its provider's slots_per_instance)"
    ]


def test_a_pool_of_static_agents_takes_any_request_up_to_the_absolute_limit(
    tmp_path: Path,
) -> None:
    # Agents may join later, so the pool's agents today do not bound the request.
    assert accepted(config(slots_per_trial=4096), MasterConfig(), tmp_path)
    assert refusal(config(slots_per_trial=10**12), MasterConfig(), tmp_path) == [
        "resources.slots_per_trial: must be <= 65,536, got 1000000000000"
    ]


def test_the_masters_grid_limit_applies_at_submission(tmp_path: Path) -> None:
    text = json.dumps(
        {
            "entrypoint": "python3 train.py",
            "searcher": {"name": "grid", "metric": "loss", "max_length": 1},
            "hyperparameters": {
                "x": {"type": "double", "minval": 0, "maxval": 1, "count": 30},
                "y": {"type": "categorical", "vals": [1, 2, 3, 4]},
            },
        }
    )
    small = MasterConfig.model_validate({"limits": {"max_grid_points": 100}})
    assert refusal(text, small, tmp_path) == [
        "hyperparameters: the grid has 120 points, over the limit of 100 (this master's limit; "
        "its limits.max_grid_points setting raises it); lower the hyperparameters' counts"
    ]
    assert accepted(text, MasterConfig(), tmp_path)
