"""The PyTorch and custom-searcher examples run to completion on a real cluster, as a user
submits them."""

from __future__ import annotations

import importlib.util
import json

import pytest

from tests.integration.cluster import ROOT, Cluster

pytestmark = pytest.mark.integration


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_pytorch_example_completes_and_learns_the_digits(cluster: Cluster) -> None:
    example = ROOT / "examples" / "pytorch"
    result = cluster.cli(
        "e", "create", str(example / "adaptive.yaml"), str(example), "--follow", timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ended COMPLETED" in result.stdout
    exp = json.loads(cluster.cli("e", "list", "--json", check=True).stdout)["experiments"][0]
    described = json.loads(
        cluster.cli("e", "describe", str(exp["id"]), "--json", check=True).stdout
    )
    assert len(described["trial_list"]) == 4
    assert described["best_trial"]["best_validation"] < 0.5, "the network should learn"


def test_custom_searcher_example_runs_its_eight_trials(cluster: Cluster) -> None:
    example = ROOT / "examples" / "custom_searcher"
    result = cluster.cli(
        "e", "create", str(example / "config.yaml"), str(example), "--follow", timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ended COMPLETED" in result.stdout
    exp = json.loads(cluster.cli("e", "list", "--json", check=True).stdout)["experiments"][0]
    trials = cluster.client.trials(exp["id"])
    assert len(trials) == 8 and all(t.steps_completed == 20 for t in trials)
    assert min(t.best_validation or 1.0 for t in trials) < 0.15
