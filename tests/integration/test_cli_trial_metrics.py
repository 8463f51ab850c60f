"""``assay trial describe ID --metrics`` against a real cluster: both series, as a table, CSV
and JSON."""

from __future__ import annotations

import csv
import io
import json
import textwrap

import pytest

from tests.integration.cluster import Cluster

pytestmark = pytest.mark.integration

CONFIG = textwrap.dedent(
    """
    entrypoint: python3 train.py
    hyperparameters: {x: 2.0}
    searcher: {name: single, metric: loss, max_length: {batches: 4}}
    """
)


def finished_trial(cluster: Cluster) -> int:
    exp_id = cluster.submit(CONFIG)
    cluster.wait_state(exp_id, "COMPLETED")
    return cluster.client.trials(exp_id)[0].id


def test_trial_describe_metrics_prints_training_and_validation_series_by_step(
    cluster: Cluster,
) -> None:
    trial_id = finished_trial(cluster)

    table = cluster.cli("t", "describe", str(trial_id), "--metrics", check=True).stdout
    assert "training metrics" in table and "validation metrics" in table
    assert "run" in table  # the training series' own column

    rows = list(
        csv.DictReader(
            io.StringIO(cluster.cli("t", "describe", str(trial_id), "--csv", check=True).stdout)
        )
    )
    assert [(r["group"], r["steps_completed"]) for r in rows] == [
        ("training", "1"),
        ("training", "2"),
        ("training", "3"),
        ("training", "4"),
        ("validation", "4"),
    ]
    assert float(rows[0]["loss"]) == 1.0 and rows[0]["run"] == "1"
    assert float(rows[-1]["loss"]) == 0.5 and rows[-1]["run"] == ""

    described = json.loads(
        cluster.cli("t", "describe", str(trial_id), "--metrics", "--json", check=True).stdout
    )
    series = described["metrics"]
    assert [r["steps_completed"] for r in series["training"]] == [1, 2, 3, 4]
    assert series["validation"][0]["loss"] == 0.5
    assert described["validation_metrics"][0]["metrics"] == {"loss": 0.5}


def test_trial_describe_refuses_csv_and_json_together(cluster: Cluster) -> None:
    result = cluster.cli("t", "describe", "1", "--csv", "--json")
    assert result.returncode == 1
    assert "--json and --csv are two output formats; pick one" in result.stderr
    assert "Traceback" not in result.stderr
