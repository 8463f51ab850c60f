"""NNI's tuners on a real cluster: an evolution search and a batch over a nested ``choice`` and a
quantized ``double`` run to COMPLETED, each trial given a resolved option and quantized values."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.integration.cluster import Cluster

pytestmark = pytest.mark.integration

HPARAMS: dict[str, Any] = {
    "step_seconds": 0.005,
    "checkpoint_every": 5,
    "x": {"type": "double", "minval": 1, "maxval": 10, "q": 0.5},
    "model": {
        "type": "choice",
        "options": [
            {"_name": "conv", "k": {"type": "int", "minval": 2, "maxval": 5}},
            {"_name": "none"},
            "plain",
        ],
    },
}


def config(searcher: dict[str, Any]) -> str:
    return yaml.safe_dump(
        {
            "name": f"{searcher['name']}-nni-test",
            "entrypoint": "python3 train.py",
            "hyperparameters": HPARAMS,
            "searcher": {"metric": "loss", "max_length": {"batches": 10}, **searcher},
            "max_restarts": 0,
        }
    )


def assert_resolved(hparams: dict[str, Any]) -> None:
    x = hparams["x"]
    assert 1 <= x <= 10 and (x * 2) == int(x * 2), hparams
    model = hparams["model"]
    assert model in ({"_name": "none"}, "plain") or (
        set(model) == {"_name", "k"} and model["_name"] == "conv" and 2 <= model["k"] <= 5
    ), hparams


def test_evolution_over_a_nested_choice_and_a_q_double_completes(cluster: Cluster) -> None:
    searcher = {
        "name": "evolution",
        "population_size": 2,
        "max_trials": 5,
        "max_concurrent_trials": 2,
    }
    exp_id = cluster.submit(config(searcher))
    exp = cluster.wait_state(exp_id, "COMPLETED", "ERROR", timeout=240)
    assert exp.state == "COMPLETED", exp
    trials = cluster.client.trials(exp_id)
    assert len(trials) == 5
    assert all(t.state == "COMPLETED" and t.steps_completed == 10 for t in trials), trials
    for trial in trials:
        assert_resolved(trial.hparams)


def test_batch_runs_each_point_over_the_space(cluster: Cluster) -> None:
    points = [{"x": 2.5, "model": {"_name": "conv", "k": 3}}, {"x": 7.0, "model": "plain"}]
    exp_id = cluster.submit(config({"name": "batch", "points": points}))
    exp = cluster.wait_state(exp_id, "COMPLETED", "ERROR", timeout=240)
    assert exp.state == "COMPLETED", exp
    trials = sorted(cluster.client.trials(exp_id), key=lambda t: t.id)
    assert [{k: t.hparams[k] for k in ("x", "model")} for t in trials] == points
    assert all(t.state == "COMPLETED" for t in trials)
