"""``assay experiment set name|description|labels|max-slots`` and ``assay experiment ls``
against a real cluster: what is set shows in the listing, and a refusal changes nothing."""

from __future__ import annotations

import json

import pytest
import yaml

from assay import rest
from assay.errors import Forbidden, InvalidRequest
from tests.integration.cluster import Cluster

pytestmark = pytest.mark.integration


def paused_experiment(cluster: Cluster) -> int:
    config = {
        "name": "before",
        "labels": ["old"],
        "entrypoint": "python3 train.py",
        "hyperparameters": {"step_seconds": 0.05},
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 10**6}},
    }
    return cluster.submit(yaml.safe_dump(config), activate=False)


def listed(cluster: Cluster, exp_id: int) -> dict[str, object]:
    answer = json.loads(cluster.cli("e", "ls", "--json", check=True).stdout)
    (exp,) = [e for e in answer["experiments"] if e["id"] == exp_id]
    return dict(exp)


def test_name_description_labels_and_unlimited_slots_set_through_the_cli(
    cluster: Cluster,
) -> None:
    exp_id = paused_experiment(cluster)
    assert listed(cluster, exp_id)["labels"] == ["old"]
    e = str(exp_id)
    assert "name set to renamed" in cluster.cli("e", "set", "name", e, "renamed", check=True).stdout
    cluster.cli("e", "set", "description", e, "what it tries", check=True)
    out = cluster.cli("e", "set", "labels", e, "a,b", "c", " a ", check=True).stdout
    assert "labels set to a, b, c" in out
    cluster.cli("e", "set", "max-slots", e, "2", check=True)
    assert "max-slots set to none" in cluster.cli("e", "set", "max-slots", e, "none").stdout

    exp = listed(cluster, exp_id)
    assert (exp["name"], exp["description"], exp["labels"]) == (
        "renamed",
        "what it tries",
        ["a", "b", "c"],
    )
    config = cluster.client.experiment(exp_id).config
    assert config["name"] == "renamed" and config["labels"] == ["a", "b", "c"]
    assert config["resources"]["max_slots"] is None
    cluster.cli("e", "set", "labels", e, "", check=True)
    assert listed(cluster, exp_id)["labels"] == []


def test_bad_values_get_one_line_errors_and_change_nothing(cluster: Cluster) -> None:
    exp_id = paused_experiment(cluster)
    e = str(exp_id)
    bad = cluster.cli("e", "set", "max-slots", e, "many")
    assert bad.returncode != 0
    assert "max-slots must be an integer or 'none' (no limit), got 'many'" in bad.stderr
    assert "Traceback" not in bad.stderr
    empty = cluster.cli("e", "set", "name", e, "  ")
    assert empty.returncode != 0 and "name must not be empty" in empty.stderr

    # All or nothing: a refused field (a weight of 0) leaves the name as it was. Built without
    # the model's own check, which would refuse it here: the master's refusal is what is tested.
    with pytest.raises(InvalidRequest):
        cluster.client.set_experiment(
            exp_id, rest.ExperimentResources.model_construct(name="half-done", weight=0.0)
        )
    assert cluster.client.experiment(exp_id).name == "before"


def test_only_the_owner_or_an_admin_may_rename(cluster: Cluster) -> None:
    exp_id = paused_experiment(cluster)  # owned by the admin
    bob = cluster.add_user("bob")
    with pytest.raises(Forbidden, match="only its owner or an admin may change it"):
        bob.set_experiment(exp_id, rest.ExperimentResources(name="bobs", labels=["x"]))
    exp = cluster.client.experiment(exp_id)
    assert (exp.name, exp.labels) == ("before", ["old"])


def test_an_ended_experiment_can_still_be_renamed(cluster: Cluster) -> None:
    exp_id = paused_experiment(cluster)
    cluster.client.transition(exp_id, "kill")
    cluster.wait_state(exp_id, "CANCELED", "ERROR", "COMPLETED")
    cluster.cli("e", "set", "name", str(exp_id), "kept-for-later", check=True)
    assert cluster.client.experiment(exp_id).name == "kept-for-later"
