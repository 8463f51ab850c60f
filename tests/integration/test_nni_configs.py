"""NNI configs as NNI's users run them, on a real master and agent: a v2 TPE experiment with a
median-stop assessor created with ``assay experiment create config.yml``, a v1 config with
``assay nni create``, nnictl's commands with NNI's statuses, and a custom NNI tuner."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
import yaml

from tests.integration.cluster import Cluster, wait_for

pytestmark = pytest.mark.integration

TRIAL = """\
import time
import nni

params = nni.get_next_parameter()
x = params["x"]
for epoch in range({epochs}):
    time.sleep({pause})
    nni.report_intermediate_result(x + 1.0 / (epoch + 1))
nni.report_final_result(x)
"""


def project(tmp_path: Path, config: dict[str, object], *, epochs: int, pause: float) -> Path:
    """An NNI project: the config beside a code directory holding the trial."""
    code = tmp_path / "code"
    code.mkdir()
    (code / "trial.py").write_text(TRIAL.format(epochs=epochs, pause=pause))
    (tmp_path / "search_space.json").write_text(
        json.dumps({"x": {"_type": "uniform", "_value": [0, 10]}})
    )
    path = tmp_path / "config.yml"
    path.write_text(yaml.safe_dump(config))
    return path


def created_id(output: str) -> int:
    match = re.search(r"experiment (\d+) created", output)
    assert match, output
    return int(match.group(1))


def nni_json(cluster: Cluster, *args: str) -> object:
    return json.loads(cluster.cli("nni", *args, "--json", check=True).stdout)


def test_nni_v2_tpe_experiment_with_medianstop_stops_trials_early(
    cluster: Cluster, tmp_path: Path
) -> None:
    config = {
        "experimentName": "nni-v2-median",
        "searchSpaceFile": "search_space.json",
        "trialCommand": "python3 trial.py",
        "trialCodeDirectory": "code",
        # One at a time, with a seed: each trial is judged against every one before it, and
        # the draws are the same in every run (two at a time, whether a trial is stopped
        # depended on which others had ended when it reached the start step).
        "trialConcurrency": 1,
        "maxTrialNumber": 10,
        "nniManagerIp": "10.1.2.3",
        "tuner": {"name": "TPE", "classArgs": {"optimize_mode": "minimize", "seed": 1}},
        "assessor": {"name": "Medianstop", "classArgs": {"start_step": 2}},
        "trainingService": {"platform": "local"},
    }
    path = project(tmp_path, config, epochs=8, pause=0.15)
    # No context argument: the config's trialCodeDirectory is the context.
    out = cluster.cli("experiment", "create", str(path), "--json", check=True)
    exp_id = int(json.loads(out.stdout)["id"])
    assert cluster.wait_state(exp_id, "COMPLETED", "ERROR", timeout=300).state == "COMPLETED"
    trials = {t.id: t for t in cluster.client.trials(exp_id)}
    assert len(trials) == 10
    stopped = {i for i, t in trials.items() if t.early_stopped}
    assert stopped, [(t.id, t.hparams["x"], t.best_validation) for t in trials.values()]
    rows = nni_json(cluster, "trial", "ls", str(exp_id))
    assert isinstance(rows, list)
    statuses = {r["trialJobId"]: r["status"] for r in rows}
    assert statuses == {i: ("EARLY_STOPPED" if i in stopped else "SUCCEEDED") for i in trials}
    view = nni_json(cluster, "view", str(exp_id))
    assert isinstance(view, dict)
    assert view["status"] == "DONE"
    logs = cluster.cli("experiment", "logs", str(exp_id), check=True).stdout
    assert "[experiment] read as an NNI v2 config from config.yml" in logs
    assert "nniManagerIp" in logs


def test_nni_v1_config_with_nni_create_stop_resume_and_export(
    cluster: Cluster, tmp_path: Path
) -> None:
    config = {
        "authorName": "someone",
        "experimentName": "nni-v1",
        "trialConcurrency": 1,
        "maxExecDuration": "1h",
        "maxTrialNum": 2,
        "trainingServicePlatform": "local",
        "searchSpacePath": "search_space.json",
        "useAnnotation": False,
        "tuner": {"builtinTunerName": "Random", "classArgs": {"optimize_mode": "maximize"}},
        "trial": {"command": "python3 trial.py", "codeDir": "code", "gpuNum": 0},
    }
    path = project(tmp_path, config, epochs=6, pause=0.5)
    out = cluster.cli("nni", "create", "--config", str(path), "--port", "8080", check=True)
    exp_id = created_id(out.stdout)
    listed = nni_json(cluster, "experiment", "list")
    assert isinstance(listed, list)
    assert {"id": exp_id, "status": "RUNNING"}.items() <= next(
        r for r in listed if r["id"] == exp_id
    ).items()

    assert "stopped" in cluster.cli("nni", "stop", str(exp_id), check=True).stdout
    wait_for(
        "the experiment to show STOPPED",
        lambda: nni_json(cluster, "view", str(exp_id))["status"] == "STOPPED",  # type: ignore[index]
        timeout=60,
    )
    assert "resumed" in cluster.cli("nni", "resume", str(exp_id), check=True).stdout
    assert cluster.wait_state(exp_id, "COMPLETED", "ERROR", timeout=300).state == "COMPLETED"

    everything = nni_json(cluster, "experiment", "list", "--all")
    assert isinstance(everything, list)
    assert next(r for r in everything if r["id"] == exp_id)["status"] == "DONE"
    trials = cluster.client.trials(exp_id)
    assert len(trials) == 2
    again = cluster.cli("nni", "stop", str(exp_id))
    assert again.returncode == 1
    assert again.stderr.strip() == f"error: experiment {exp_id} is already DONE; nothing to stop"

    as_json = tmp_path / "export.json"
    cluster.cli(
        "nni",
        "experiment",
        "export",
        str(exp_id),
        "--type",
        "json",
        "--filename",
        str(as_json),
        check=True,
    )
    exported = json.loads(as_json.read_text())
    assert sorted(r["trialJobId"] for r in exported) == sorted(t.id for t in trials)
    assert {r["status"] for r in exported} == {"SUCCEEDED"}
    as_csv = tmp_path / "export.csv"
    cluster.cli(
        "nni",
        "experiment",
        "export",
        str(exp_id),
        "--type",
        "csv",
        "--filename",
        str(as_csv),
        check=True,
    )
    table = list(csv.DictReader(as_csv.open()))
    by_id = {int(r["trialJobId"]): r for r in table}
    for t in trials:
        assert float(by_id[t.id]["x"]) == pytest.approx(t.hparams["x"])
        # The final result (the trial's best intermediate one was x + 1).
        assert float(by_id[t.id]["reward"]) == pytest.approx(t.hparams["x"])


CUSTOM_TUNER = """\
from nni.tuner import NoMoreTrialError, Tuner


class StepTuner(Tuner):
    \"\"\"Tries x = 1, 2, 3 in turn, passing on the result it received last.\"\"\"

    def __init__(self, optimize_mode="maximize"):
        # NNI passes every classArgs entry, optimize_mode too, to the constructor.
        self.space = None
        self.last = None

    def update_search_space(self, search_space):
        self.space = search_space

    def generate_parameters(self, parameter_id, **kwargs):
        if parameter_id >= 3:
            raise NoMoreTrialError()
        options = self.space["x"]["_value"]
        kind = self.space["x"]["_type"]
        return {"x": options[parameter_id], "last": self.last, "space_type": kind}

    def receive_trial_result(self, parameter_id, parameters, value, **kwargs):
        self.last = value
"""


def test_custom_nni_tuner_drives_the_experiment(cluster: Cluster, tmp_path: Path) -> None:
    code = tmp_path / "code"
    code.mkdir()
    (code / "trial.py").write_text(
        "import nni\np = nni.get_next_parameter()\nnni.report_final_result(p['x'] * 10)\n"
    )
    (code / "step_tuner.py").write_text(CUSTOM_TUNER)
    config = {
        "searchSpace": {"x": {"_type": "choice", "_value": [1, 2, 3]}},
        "trialCommand": "python3 trial.py",
        "trialCodeDirectory": "code",
        "tuner": {
            "className": "step_tuner.StepTuner",
            "codeDirectory": "code",
            "classArgs": {"optimize_mode": "maximize"},
        },
        "trainingService": {"platform": "local"},
    }
    path = tmp_path / "config.yml"
    path.write_text(yaml.safe_dump(config))
    out = cluster.cli("experiment", "create", str(path), "--json", check=True)
    exp_id = int(json.loads(out.stdout)["id"])
    final = cluster.wait_state(exp_id, "COMPLETED", "ERROR", timeout=240)
    assert final.state == "COMPLETED", final.message
    trials = sorted(cluster.client.trials(exp_id), key=lambda t: t.id)
    assert [t.hparams["x"] for t in trials] == [1, 2, 3]
    assert [t.hparams["space_type"] for t in trials] == ["choice"] * 3
    # Each trial carries the result its predecessor reported, as the tuner received it.
    assert [t.hparams["last"] for t in trials] == [None, 10, 20]


COUNTING_TUNER = """\
from nni.tuner import Tuner


class CountingTuner(Tuner):
    \"\"\"Proposes x = start, start + step, ... for ever: maxTrialNumber ends the search.\"\"\"

    def __init__(self, start, step=1, optimize_mode="maximize"):
        self.start = start
        self.step = step

    def generate_parameters(self, parameter_id, **kwargs):
        return {"x": self.start + self.step * parameter_id}
"""


def test_custom_nni_tuner_gets_class_args_concurrency_and_trial_budget(
    cluster: Cluster, tmp_path: Path
) -> None:
    code = tmp_path / "code"
    code.mkdir()
    (code / "trial.py").write_text(
        "import time, nni\np = nni.get_next_parameter()\ntime.sleep(1.5)\n"
        "nni.report_final_result(p['x'])\n"
    )
    (code / "counting_tuner.py").write_text(COUNTING_TUNER)
    config = {
        "searchSpace": {"x": {"_type": "randint", "_value": [0, 1000]}},
        "trialCommand": "python3 trial.py",
        "trialCodeDirectory": "code",
        "trialConcurrency": 2,
        "maxTrialNumber": 4,
        "tuner": {
            "className": "counting_tuner.CountingTuner",
            "codeDirectory": "code",
            "classArgs": {"start": 100, "step": 5, "optimize_mode": "maximize"},
        },
        "trainingService": {"platform": "local"},
    }
    path = tmp_path / "config.yml"
    path.write_text(yaml.safe_dump(config))
    out = cluster.cli("experiment", "create", str(path), "--json", check=True)
    exp_id = int(json.loads(out.stdout)["id"])
    final = cluster.wait_state(exp_id, "COMPLETED", "ERROR", timeout=240)
    assert final.state == "COMPLETED", final.message
    trials = sorted(cluster.client.trials(exp_id), key=lambda t: t.id)
    # The constructor got classArgs; maxTrialNumber stopped a tuner that never runs out.
    assert [t.hparams["x"] for t in trials] == [100, 105, 110, 115]
    # trialConcurrency: the second trial was created before the first ended.
    assert trials[0].ended_at is not None
    assert trials[1].created_at < trials[0].ended_at
