"""NNI experiments on a real master and agent behave as NNI's own do where assay used to
differ: ``maxTrialNumber`` bounds GridSearch."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.cluster import Cluster

pytestmark = pytest.mark.integration

TRIAL = """\
import nni

params = nni.get_next_parameter()
x = params["x"]
for epoch in range({epochs}):
    nni.report_intermediate_result({intermediate})
nni.report_final_result(x)
"""


def project(
    tmp_path: Path,
    config: dict[str, Any],
    space: dict[str, Any],
    *,
    epochs: int = 2,
    intermediate: str = "x",
) -> Path:
    """An NNI project: the config and search space beside a code directory with the trial."""
    code = tmp_path / "code"
    code.mkdir()
    (code / "trial.py").write_text(TRIAL.format(epochs=epochs, intermediate=intermediate))
    (tmp_path / "search_space.json").write_text(json.dumps(space))
    path = tmp_path / "config.yml"
    base = {
        "searchSpaceFile": "search_space.json",
        "trialCommand": "python3 trial.py",
        "trialCodeDirectory": "code",
        "trainingService": {"platform": "local"},
    }
    path.write_text(yaml.safe_dump({**base, **config}))
    return path


def created_id(output: str) -> int:
    match = re.search(r"created experiment (\d+)", output)
    assert match, output
    return int(match.group(1))


def test_grid_search_runs_no_more_than_max_trial_number_trials(
    cluster: Cluster, tmp_path: Path
) -> None:
    config = {
        "trialConcurrency": 2,
        "maxTrialNumber": 2,
        "tuner": {"name": "GridSearch", "classArgs": {"optimize_mode": "minimize"}},
    }
    path = project(tmp_path, config, {"x": {"_type": "choice", "_value": [1, 2, 3]}})
    exp_id = created_id(cluster.cli("experiment", "create", str(path), check=True).stdout)
    assert cluster.wait_state(exp_id, "COMPLETED", "ERROR", timeout=180).state == "COMPLETED"
    trials = sorted(cluster.client.trials(exp_id), key=lambda t: t.id)
    # GridSearch's first two points, as NNI's experiment stops after maxTrialNumber trials.
    assert [t.hparams["x"] for t in trials] == [1, 2]


# Intermediate results better than the final one, reversed across trials: ranked by them, the
# trial with x = 3 would be best (-30); ranked by final results (NNI's way), the one with x = 1.
# The trial with x = 2 reports no final result: NNI leaves it unranked.
RANKED_TRIAL = """\
import nni

x = nni.get_next_parameter()["x"]
for epoch in range(2):
    nni.report_intermediate_result(-10.0 * x)
if x != 2:
    nni.report_final_result(float(x))
"""


def test_an_nni_experiment_s_best_trial_is_the_best_final_result(
    cluster: Cluster, tmp_path: Path
) -> None:
    config = {
        "trialConcurrency": 1,
        "maxTrialNumber": 3,
        "tuner": {"name": "GridSearch", "classArgs": {"optimize_mode": "minimize"}},
    }
    path = project(tmp_path, config, {"x": {"_type": "choice", "_value": [1, 2, 3]}})
    (tmp_path / "code" / "trial.py").write_text(RANKED_TRIAL)
    # Followed to its end, piped: the summary names the best trial.
    done = cluster.cli("experiment", "create", str(path), "-f", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    exp_id = int(re.search(r"experiment (\d+) ended", done.stdout).group(1))  # type: ignore[union-attr]
    trials = {t.hparams["x"]: t for t in cluster.client.trials(exp_id)}
    # Every result was reported (the intermediate ones still reach the searcher and assessors).
    assert [len(cluster.client.metrics(trials[x].id, "validation")) for x in (1, 2, 3)] == [3, 2, 3]
    assert {x: t.best_validation for x, t in trials.items()} == {1: 1.0, 2: None, 3: 3.0}
    best = trials[1]
    assert f"best trial: {best.id}  default = 1  " in done.stdout
    described = json.loads(cluster.cli("e", "describe", str(exp_id), "--json", check=True).stdout)
    assert described["best_trial"]["id"] == best.id
    assert described["best_trial"]["best_validation"] == 1.0
    assert described["source"] == "nni-v2"
    text = cluster.cli("e", "describe", str(exp_id), check=True).stdout
    assert f"best trial: {best.id}  default = 1" in text
    # nnictl's listing: each trial's final result, and --head/--tail rank by it.
    rows = json.loads(cluster.cli("nni", "trial", "ls", str(exp_id), "--json", check=True).stdout)
    assert {r["trialJobId"]: r["value"] for r in rows} == {
        trials[1].id: 1.0,
        trials[2].id: None,
        trials[3].id: 3.0,
    }
    head = cluster.cli("nni", "trial", "ls", str(exp_id), "--head", "1", "--json", check=True)
    assert [r["trialJobId"] for r in json.loads(head.stdout)] == [trials[3].id]
    tail = cluster.cli("nni", "trial", "ls", str(exp_id), "--tail", "5", "--json", check=True)
    assert [r["trialJobId"] for r in json.loads(tail.stdout)] == [trials[1].id, trials[3].id]


STOPPABLE_TRIAL = """\
import time
import nni

x = nni.get_next_parameter()["x"]
for epoch in range(10):
    time.sleep(0.3)
    nni.report_intermediate_result(float(x))
nni.report_final_result(float(x))
"""


def test_following_an_nni_experiment_shows_a_trial_its_assessor_stopped_as_early_stopped(
    cluster: Cluster, tmp_path: Path
) -> None:
    # One at a time, in order: the fourth trial (x = 1) is worse than the median of the three
    # before it at the assessor's start step (larger is better), and only it is stopped.
    points = [{"x": 9}, {"x": 8.8}, {"x": 8.6}, {"x": 1}]
    config = {
        "trialConcurrency": 1,
        "maxTrialNumber": 4,
        "tuner": {"name": "BatchTuner"},
        "assessor": {
            "name": "Medianstop",
            "classArgs": {"optimize_mode": "maximize", "start_step": 2},
        },
    }
    space = {"combine_params": {"_type": "choice", "_value": points}}
    path = project(tmp_path, config, space)
    (tmp_path / "code" / "trial.py").write_text(STOPPABLE_TRIAL)
    done = cluster.cli("experiment", "create", str(path), "-f", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    exp_id = int(re.search(r"experiment (\d+) ended", done.stdout).group(1))  # type: ignore[union-attr]
    trials = sorted(cluster.client.trials(exp_id), key=lambda t: t.id)
    assert [t.early_stopped for t in trials] == [False, False, False, True]
    lines = done.stdout.splitlines()
    for t in trials[:3]:
        assert any(line.startswith(f"trial {t.id} SUCCEEDED after ") for line in lines), lines
    stopped = trials[3].id
    assert any(line.startswith(f"trial {stopped} EARLY_STOPPED after ") for line in lines), lines
    assert not any(line.startswith(f"trial {stopped} COMPLETED") for line in lines), lines
    assert "trials 1 early_stopped, 3 succeeded" in done.stdout
    # And where the experiment's trials are listed.
    listed = cluster.cli("e", "list-trials", str(exp_id), "--csv", check=True).stdout
    assert f"{stopped},EARLY_STOPPED," in listed
