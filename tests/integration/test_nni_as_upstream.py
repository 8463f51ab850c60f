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
