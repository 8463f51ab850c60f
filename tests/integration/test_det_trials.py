"""Determined's own ``det trial`` commands, ``det experiment list-trials`` and its Python SDK's
trial reads (determined 0.38.1 from PyPI) on a real master and agent, with only
``DET_MASTER`` and a sign-in set: describe (with workloads, ``--metrics``, ``--json``), logs
(``--head``, ``--tail``, filters, ``-f`` on a running trial until it ends), list-trials, kill,
and an SDK script reading a trial, its logs and its metrics. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
import re
import subprocess
import textwrap
import time
from pathlib import Path

import httpx
import pytest
import yaml

from tests.integration.cluster import CONTEXTS, Cluster, wait_for
from tests.integration.det_client import DET, DET_PYTHON, det, det_cluster, one_line

# On SQLite only: these routes add no SQL of their own (they read through the master's trial,
# log and metric reads, which assay's own tests run on PostgreSQL too), and the suite's time
# is better spent where a route brings new reads (experiments, checkpoints, the job queue).
pytestmark = [
    pytest.mark.integration,
    pytest.mark.parametrize("det_cluster", ["sqlite"], indirect=True),
]

__all__ = ["det_cluster"]

STEPS = 20


def _experiment(c: Cluster, tmp: Path, name: str, batches: int, step_seconds: float) -> int:
    """An experiment of one trial of the Determined-style test trial, created with assay's
    own command: it reports loss 1/step every step and validates at its end."""
    config = tmp / f"{name}.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "name": name,
                "entrypoint": "python3 train.py",
                "hyperparameters": {"checkpoint_every": 10, "step_seconds": step_seconds},
                "searcher": {
                    "name": "single",
                    "metric": "loss",
                    "max_length": {"batches": batches},
                },
            }
        )
    )
    created = c.cli("experiment", "create", str(config), str(CONTEXTS / "determined"))
    assert created.returncode == 0, created
    found = re.search(r"experiment (\d+)", created.stdout + created.stderr, re.IGNORECASE)
    assert found, created
    return int(found.group(1))


def _admin(c: Cluster) -> dict[str, str]:
    return {"DET_USER": "admin", "DET_PASS": c.admin_password}


def _ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result
    return result.stdout


def test_det_describes_lists_and_reads_the_logs_of_a_finished_trial(
    det_cluster: Cluster, tmp_path: Path
) -> None:
    c = det_cluster
    admin = _admin(c)
    exp_id = _experiment(c, tmp_path, "finished", STEPS, 0.01)
    assert c.client.wait(exp_id, timeout=120) == "COMPLETED"
    (trial,) = c.client.trials(exp_id)
    tid = str(trial.id)

    described = json.loads(_ok(det(c, tmp_path, "trial", "describe", tid, "--json", **admin)))
    shown = described["trial"]
    assert shown["experimentId"] == exp_id and shown["state"] == "STATE_COMPLETED"
    assert shown["totalBatchesProcessed"] == STEPS
    assert shown["hparams"] == {"checkpoint_every": 10, "step_seconds": 0.01}
    loss = shown["summaryMetrics"]["avg_metrics"]["loss"]
    assert loss["count"] == STEPS and loss["last"] == pytest.approx(1 / STEPS)
    assert loss["max"] == pytest.approx(1.0)
    assert shown["checkpointCount"] == 1  # of 2: the experiment's GC kept the latest
    kinds = [
        next(k for k in ("training", "validation", "checkpoint") if w.get(k))
        for w in described["workloads"]
    ]
    assert kinds.count("training") == STEPS and kinds.count("checkpoint") == 2
    assert kinds.count("validation") == 1
    last_validation = next(w["validation"] for w in described["workloads"] if w.get("validation"))
    assert last_validation["totalBatches"] == STEPS
    assert last_validation["metrics"]["avgMetrics"]["loss"] == pytest.approx(1 / STEPS)

    # A group (or Determined's older metricType) keeps only that group's reports.
    auth = {"Authorization": f"Bearer {c.client.http.token}"}
    for query in ("group=validation", "metricType=METRIC_TYPE_VALIDATION"):
        page = httpx.get(f"{c.url}/det/api/v1/trials/{tid}/workloads?{query}", headers=auth)
        assert [bool(w.get("validation")) for w in page.json()["workloads"]] == [True], page.text

    table = _ok(det(c, tmp_path, "trial", "describe", tid, "--metrics", **admin))
    assert "COMPLETED" in table and "Workloads:" in table and "Workload Metrics" in table, table
    assert '"loss": 0.05' in table  # the last training report's value, 1/20

    listed = _ok(det(c, tmp_path, "experiment", "list-trials", str(exp_id), **admin))
    row = next(line for line in listed.splitlines() if line.strip().startswith(tid))
    assert "COMPLETED" in row and row.rstrip().endswith(str(STEPS))

    # describe reads the experiment's trials and each trial's workloads.
    exp_table = _ok(det(c, tmp_path, "experiment", "describe", str(exp_id), "--metrics", **admin))
    assert "Training Metric: loss" in exp_table and "Validation Metric: loss" in exp_table
    assert "COMPLETED" in exp_table.split("Trials:")[1]

    logs = _ok(det(c, tmp_path, "trial", "logs", tid, **admin))
    assert "started at step 0 run 1" in logs and f"done at step {STEPS}" in logs
    assert logs.index("started at step 0") < logs.index(f"done at step {STEPS}")
    head = _ok(det(c, tmp_path, "trial", "logs", tid, "--head", "1", **admin))
    assert len([x for x in head.splitlines() if "|| " in x]) == 1
    tail = _ok(det(c, tmp_path, "trial", "logs", tid, "--tail", "2", **admin))
    tail_lines = [x for x in tail.splitlines() if "|| " in x]
    assert len(tail_lines) == 2 and tail_lines == [x for x in logs.splitlines() if "|| " in x][-2:]
    ranked = _ok(det(c, tmp_path, "trial", "logs", tid, "--rank-id", "1", **admin))
    assert "done at step" not in ranked
    as_json = _ok(det(c, tmp_path, "trial", "logs", tid, "--json", "--stdtype", "stdout", **admin))
    assert f'"trialId": {tid}' in as_json and '"stdtype": "stdout"' in as_json
    assert "done at step" in as_json and '"stdtype": "stderr"' not in as_json

    missing = det(c, tmp_path, "trial", "describe", "99999", **admin)
    assert "trial 99999" in one_line(missing)

    sdk = textwrap.dedent(
        f"""
        import json, warnings
        from determined.experimental import client
        warnings.simplefilter("ignore")
        client.login()
        trial = client.get_trial({tid})
        trial.reload()
        exp = client.get_experiment({exp_id})
        training = list(trial.iter_metrics("training"))
        validation = list(trial.iter_metrics("validation"))
        print(json.dumps({{
            "state": trial.state.value,
            "hparams": trial.hparams,
            "trials": [t.id for t in exp.list_trials()],
            "logs": list(trial.iter_logs()),
            "tail": list(trial.iter_logs(tail=1)),
            "training": [[m.steps_completed, m.metrics["loss"]] for m in training],
            "validation": [[m.steps_completed, m.metrics["loss"]] for m in validation],
            "legacy": [m.total_batches for m in trial.stream_validation_metrics()],
        }}))
        """
    )
    ran = subprocess.run(
        [str(DET_PYTHON), "-c", sdk],
        env={"DET_MASTER": f"{c.url}/det", "HOME": str(tmp_path), **admin},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ran.returncode == 0, ran
    read = json.loads(ran.stdout.strip().splitlines()[-1])
    assert read["state"] == "STATE_COMPLETED" and read["trials"] == [trial.id]
    assert read["hparams"]["checkpoint_every"] == 10
    assert any(f"done at step {STEPS}" in line for line in read["logs"])
    assert len(read["tail"]) == 1 and read["tail"][0] == read["logs"][-1]
    assert read["training"][0] == [1, pytest.approx(1.0)]
    assert [s for s, _ in read["training"]] == list(range(1, STEPS + 1))
    assert read["validation"] == [[STEPS, pytest.approx(1 / STEPS)]]
    assert read["legacy"] == [STEPS]


def test_det_follows_the_logs_of_a_running_trial_and_kills_it(
    det_cluster: Cluster, tmp_path: Path
) -> None:
    c = det_cluster
    admin = _admin(c)
    exp_id = _experiment(c, tmp_path, "running", 100_000, 0.05)
    (trial,) = wait_for(
        "the trial to run",
        lambda: [t for t in c.client.trials(exp_id) if t.state == "RUNNING" and t.steps_completed],
        timeout=90,
    )
    tid = str(trial.id)
    following = subprocess.Popen(
        [str(DET), "trial", "logs", "-f", tid],
        env={"DET_MASTER": f"{c.url}/det", "HOME": str(tmp_path), **admin},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(2)
        assert following.poll() is None, following.communicate()  # still following
        listed = _ok(det(c, tmp_path, "e", "list-trials", str(exp_id), **admin))
        assert "RUNNING" in listed
        killed = _ok(det(c, tmp_path, "trial", "kill", tid, **admin))
        assert f"Killed trial {tid}" in killed
        out, err = following.communicate(timeout=60)
    finally:
        if following.poll() is None:
            following.kill()
    assert following.returncode == 0, err
    assert "started at step 0 run 1" in out
    assert "Trial log stream ended" in out
    ended = c.client.trial(trial.id)
    assert ended.state.terminal, ended
    shown = json.loads(_ok(det(c, tmp_path, "trial", "describe", tid, "--json", **admin)))
    assert shown["trial"]["state"] == f"STATE_{ended.state.value}"
    again = det(c, tmp_path, "trial", "kill", tid, **admin)
    assert f"trial {tid} has already ended" in one_line(again)
