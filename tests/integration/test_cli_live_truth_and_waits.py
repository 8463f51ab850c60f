"""What a running trial has done and why queued work waits, the same in every view: ``trial
describe``, ``experiment describe``, ``list-trials`` and ``job list``, as tables and as JSON."""

from __future__ import annotations

import json
import textwrap

import pytest

from tests.integration.cluster import CONTEXTS, Cluster, wait_for

pytestmark = pytest.mark.integration

STALL = textwrap.dedent(
    """
    name: stall
    entrypoint: python3 train.py
    hyperparameters: {train_steps: 7, validate_at: 5}
    searcher: {name: single, metric: loss, max_length: {batches: 1000}}
    """
)


def test_a_running_trial_shows_the_steps_and_latest_metrics_of_its_reports_everywhere(
    cluster: Cluster,
) -> None:
    exp_id = cluster.submit(STALL, CONTEXTS / "stall")
    trial_id = wait_for(
        "the trial to report its training",
        lambda: next(
            (
                t.id
                for t in cluster.client.trials(exp_id)
                if t.state == "RUNNING" and t.steps_completed == 7
            ),
            None,
        ),
    )
    # It never checkpointed: its steps come from its reports alone.
    assert cluster.client.trial_checkpoints(trial_id) == []

    described = json.loads(cluster.cli("t", "describe", str(trial_id), "--json", check=True).stdout)
    in_experiment = json.loads(
        cluster.cli("e", "describe", str(exp_id), "--json", check=True).stdout
    )
    listed = json.loads(cluster.cli("e", "list-trials", str(exp_id), "--json", check=True).stdout)
    views = [described, in_experiment["trial_list"][0], listed[0]]
    for view in views:
        assert view["state"] == "RUNNING"
        assert view["steps_completed"] == 7
        assert view["latest_training"]["steps_completed"] == 7
        assert view["latest_training"]["metrics"] == {"loss": pytest.approx(1 / 7)}
        assert view["latest_validation"]["steps_completed"] == 5
        assert view["latest_validation"]["metrics"] == {"loss": 0.4}
        assert view["waiting"] is None

    text = cluster.cli("t", "describe", str(trial_id), check=True).stdout
    assert "steps 7" in text
    assert "latest training: step 7  loss=0.142857" in text
    assert "latest validation: step 5  loss=0.4" in text
    assert "hyperparameters: train_steps=7, validate_at=5" in text
    for command in (("e", "describe", str(exp_id)), ("e", "list-trials", str(exp_id))):
        table = cluster.cli(*command, check=True).stdout
        assert "Latest training" in table and "Latest validation" in table
        (row,) = [line for line in table.splitlines() if line.split()[:1] == [str(trial_id)]]
        # Trial, State, Steps, Best, Latest training, Latest validation: the same numbers.
        assert row.split()[1:6] == ["RUNNING", "7", "0.4", "0.142857", "0.4"]
    cluster.cli("e", "kill", str(exp_id), check=True)


WIDE = textwrap.dedent(
    """
    name: wide
    entrypoint: python3 train.py
    resources: {slots_per_trial: 4}
    hyperparameters: {x: 1.0}
    searcher: {name: single, metric: loss, max_length: {batches: 5}}
    """
)

TOO_BIG = "needs 4 slots a trial; the largest agent in pool 'default' has 2"


def test_a_4_slot_trial_on_a_2_slot_cluster_is_explained_in_describe_and_job_list(
    cluster: Cluster,
) -> None:
    exp_id = cluster.submit(WIDE)
    exp = wait_for(
        "the experiment to explain its wait",
        lambda: (e := cluster.client.experiment(exp_id)).waiting and e,
    )
    assert exp.waiting == TOO_BIG
    assert exp.trials == {"QUEUED": 1}

    described = cluster.cli("e", "describe", str(exp_id), check=True).stdout
    assert f"waiting: {TOO_BIG}" in described
    as_json = json.loads(cluster.cli("e", "describe", str(exp_id), "--json", check=True).stdout)
    assert as_json["waiting"] == TOO_BIG
    (trial,) = as_json["trial_list"]
    assert trial["state"] == "QUEUED" and trial["waiting"] == TOO_BIG

    trial_text = cluster.cli("t", "describe", str(trial["id"]), check=True).stdout
    assert f"waiting: {TOO_BIG}" in trial_text

    jobs = json.loads(cluster.cli("job", "list", "--json", check=True).stdout)["jobs"]
    (row,) = [j for j in jobs if j["experiment_id"] == exp_id]
    assert row["status"] == "QUEUED" and row["waiting"] == TOO_BIG
    listed = cluster.cli("job", "list", check=True).stdout
    assert "Why it waits" in listed and TOO_BIG in listed

    # A second agent of the same size makes room for a trial spread over both: it starts.
    cluster.start_agent("agent-2", slots=2)
    cluster.wait_state(exp_id, "COMPLETED")
    assert cluster.client.experiment(exp_id).waiting is None
