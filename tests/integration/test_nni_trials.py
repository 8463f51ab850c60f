"""NNI-style trial code (``import nni``) on a real cluster: parameters, results as metrics,
median-stop early stopping, the experiment and trial time limits, experiment notes, and the
AdaptDL directories."""

from __future__ import annotations

import csv
import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from assay.errors import InvalidConfig
from tests.integration.cluster import Cluster

pytestmark = pytest.mark.integration

NNI_TRIAL = """\
import os, time
import nni

params = nni.get_next_parameter()
print("NNI", nni.get_experiment_id(), nni.get_trial_id(), nni.get_sequence_id(), flush=True)
for name in ("NNI_PLATFORM", "NNI_SYS_DIR", "NNI_OUTPUT_DIR"):
    print(name, os.environ.get(name), flush=True)
x = params["x"]
for epoch in range(int(params.get("epochs", 3))):
    time.sleep(float(params.get("pause", 0.05)))
    nni.report_intermediate_result({"default": x + 1.0 / (epoch + 1), "epoch": epoch})
nni.report_final_result(x)
"""


def context(tmp_path: Path, script: str = NNI_TRIAL) -> Path:
    root = tmp_path / "nni-context"
    root.mkdir(exist_ok=True)
    (root / "mnist.py").write_text(script)
    return root


def config(searcher: dict[str, Any], **extra: Any) -> str:
    hparams = extra.pop("hyperparameters", {})
    return yaml.safe_dump(
        {
            "name": "nni-style",
            "entrypoint": "python3 mnist.py",
            "hyperparameters": {"x": {"type": "double", "minval": 0, "maxval": 10}, **hparams},
            "searcher": {"metric": "default", **searcher},
            "max_restarts": 0,
            "reproducibility": {"experiment_seed": 7},
            **extra,
        }
    )


def test_nni_trial_code_completes_with_its_results_as_metrics(
    cluster: Cluster, tmp_path: Path
) -> None:
    cfg = config({"name": "random", "max_trials": 2, "max_concurrent_trials": 2})
    notes = ["tuner SMAC mapped to tpe", "keys nniManagerIp ignored"]
    exp_id = cluster.submit(cfg, context(tmp_path), notes=notes)
    assert cluster.wait_state(exp_id, "COMPLETED", "ERROR").state == "COMPLETED"
    trials = sorted(cluster.client.trials(exp_id), key=lambda t: t.id)
    assert [t.state for t in trials] == ["COMPLETED", "COMPLETED"]
    for seq, trial in enumerate(trials):
        x = trial.hparams["x"]
        vals = cluster.client.metrics(trial.id, "validation")
        assert [m.steps_completed for m in vals] == [1, 2, 3, 4]
        assert [m.metrics["default"] for m in vals] == pytest.approx(
            [x + 1.0, x + 0.5, x + 1 / 3, x]
        )
        assert vals[0].metrics["epoch"] == 0
        assert trial.best_validation == pytest.approx(x)
        lines = cluster.trial_logs(trial.id)
        assert f"NNI {exp_id} {trial.id} {seq}" in lines
        assert "NNI_PLATFORM local" in lines
        sys_dir = next(line.split(" ", 1)[1] for line in lines if line.startswith("NNI_SYS_DIR"))
        assert f"NNI_OUTPUT_DIR {sys_dir}/output" in lines
    logs = cluster.cli("experiment", "logs", str(exp_id), check=True).stdout
    assert "[experiment] tuner SMAC mapped to tpe" in logs
    assert "[experiment] keys nniManagerIp ignored" in logs
    assert f"[trial {trials[0].id}] NNI {exp_id}" in logs


def test_nni_final_result_completes_a_planned_searcher_operation(
    cluster: Cluster, tmp_path: Path
) -> None:
    cfg = config({"name": "random", "max_trials": 1, "max_length": {"batches": 5}})
    exp_id = cluster.submit(cfg, context(tmp_path))
    assert cluster.wait_state(exp_id, "COMPLETED", "ERROR").state == "COMPLETED"
    [trial] = cluster.client.trials(exp_id)
    assert trial.state == "COMPLETED" and trial.message == ""
    assert trial.steps_completed == 5 and not trial.early_stopped


def test_median_stop_ends_nni_trials_early(cluster: Cluster, tmp_path: Path) -> None:
    searcher = {
        "name": "random",
        "max_trials": 8,
        "max_concurrent_trials": 2,
        "smaller_is_better": True,
        "early_stopping": {"name": "medianstop", "start_step": 2, "min_trials": 2},
    }
    cfg = config(searcher, hyperparameters={"epochs": 12, "pause": 0.3})
    exp_id = cluster.submit(cfg, context(tmp_path))
    assert cluster.wait_state(exp_id, "COMPLETED", "ERROR", timeout=240).state == "COMPLETED"
    trials = cluster.client.trials(exp_id)
    stopped = [t for t in trials if t.early_stopped]
    assert stopped, [(t.id, t.hparams, t.best_validation) for t in trials]
    for trial in stopped:
        assert trial.state == "COMPLETED"
        # Stopped before its twelve intermediate results and its final one.
        assert len(cluster.client.metrics(trial.id, "validation")) < 13
    full = [t for t in trials if not t.early_stopped]
    assert full and all(len(cluster.client.metrics(t.id, "validation")) == 13 for t in full)


def test_max_duration_counts_active_time_and_stops_the_experiment(
    cluster: Cluster, tmp_path: Path
) -> None:
    cfg = config(
        {"name": "random", "max_trials": 1},
        hyperparameters={"epochs": 400, "pause": 0.2},
        max_duration="5s",
    )
    exp_id = cluster.submit(cfg, context(tmp_path), activate=False)
    time.sleep(6.5)
    assert cluster.client.experiment(exp_id).state == "PAUSED"
    cluster.client.transition(exp_id, "activate")
    time.sleep(2.5)
    # The paused seconds did not count: it is still running.
    assert cluster.client.experiment(exp_id).state == "ACTIVE"
    started = time.monotonic()
    exp = cluster.wait_state(exp_id, "COMPLETED", "ERROR", "CANCELED", timeout=60)
    assert exp.state == "COMPLETED"
    assert time.monotonic() - started < 30
    assert "max_duration (5s) reached" in exp.message
    [trial] = cluster.client.trials(exp_id)
    assert trial.state == "COMPLETED"
    assert len(cluster.client.metrics(trial.id, "validation")) < 400
    assert any("max_duration (5s) reached" in n.text for n in cluster.client.notes(exp_id))


def test_max_trial_duration_ends_a_trial_that_runs_too_long(
    cluster: Cluster, tmp_path: Path
) -> None:
    cfg = config(
        {"name": "random", "max_trials": 1},
        hyperparameters={"epochs": 400, "pause": 0.2},
        max_trial_duration=3,
    )
    exp_id = cluster.submit(cfg, context(tmp_path))
    cluster.wait_state(exp_id, "COMPLETED", "ERROR", "CANCELED", timeout=60)
    [trial] = cluster.client.trials(exp_id)
    assert trial.state == "CANCELED"
    assert trial.message == "ran longer than max_trial_duration: ended"
    detail = cluster.client.trial(trial.id)
    assert detail.allocations[-1].exit_reason == "ran longer than max_trial_duration"
    ran = detail.allocations[-1].ended_at - detail.allocations[-1].started_at  # type: ignore[operator]
    assert 3 <= ran < 20
    texts = [n.text for n in cluster.client.notes(exp_id)]
    assert f"trial {trial.id} ran longer than max_trial_duration (3s): ending it" in texts


ADAPTDL_TRIAL = """\
import os, pathlib
import nni

params = nni.get_next_parameter()
ckpt = pathlib.Path(os.environ["ADAPTDL_CHECKPOINT_PATH"])
share = pathlib.Path(os.environ["ADAPTDL_SHARE_PATH"])
board = pathlib.Path(os.environ["ADAPTDL_TENSORBOARD_LOGDIR"])
print("PATHS", ckpt, share, board, flush=True)
print("PLATFORM", os.environ["NNI_PLATFORM"], flush=True)
runs = ckpt / "runs"
runs.write_text(runs.read_text() + "run\\n" if runs.exists() else "run\\n")
(share / f"trial-{nni.get_trial_id()}").write_text("here")
(board / f"events-{nni.get_trial_id()}").write_text("scalars")
if runs.read_text().count("run") == 1:
    raise SystemExit("first run fails on purpose: the restart must see its checkpoint path")
nni.report_final_result(params["x"])
"""


def test_adaptdl_paths_keep_checkpoints_share_and_tensorboard(
    cluster: Cluster, tmp_path: Path
) -> None:
    storage = tmp_path / "storage"
    cfg = yaml.safe_load(config({"name": "random", "max_trials": 2, "max_concurrent_trials": 2}))
    cfg.update(
        max_restarts=1,
        checkpoint_storage={"type": "shared_fs", "host_path": str(storage)},
        adaptdl={
            "image": "registry.example/nni:adaptdl",
            "adaptive": True,
            "checkpoint": {"storage_class": "dfs", "storage_size": "1Gi"},
        },
    )
    exp_id = cluster.submit(yaml.safe_dump(cfg), context(tmp_path, ADAPTDL_TRIAL))
    assert cluster.wait_state(exp_id, "COMPLETED", "ERROR").state == "COMPLETED"
    root = storage / "adaptdl" / f"experiment-{exp_id}"
    trials = cluster.client.trials(exp_id)
    assert all(t.state == "COMPLETED" and t.restarts == 1 for t in trials)
    for trial in trials:
        paths = [line for line in cluster.trial_logs(trial.id) if line.startswith("PATHS")]
        ckpt = root / "checkpoint" / f"trial-{trial.id}"
        # Both runs saw the same checkpoint path, and the second found the first's file; each
        # run writes TensorBoard files into its own directory, which the harness uploads.
        assert [p.split()[1:3] for p in paths] == [[str(ckpt), str(root / "share")]] * 2
        assert all(p.split()[3].endswith("/tensorboard") for p in paths)
        assert (ckpt / "runs").read_text() == "run\nrun\n"
        assert cluster.client.trial(trial.id).allocations[-1].exit_code == 0
    ids = sorted(t.id for t in trials)
    assert sorted(p.name for p in (root / "share").iterdir()) == [f"trial-{i}" for i in ids]
    # The experiment has ended; each trial's TensorBoard files are in the storage.
    for i in ids:
        board = storage / "tensorboard" / str(exp_id) / str(i)
        assert sorted(p.name for p in board.iterdir()) == [f"events-{i}"]
    assert all("PLATFORM adl" in cluster.trial_logs(t.id) for t in trials)


def test_adaptdl_nfs_is_refused_at_submission_in_one_line_and_nothing_is_created(
    cluster: Cluster, tmp_path: Path
) -> None:
    # AdaptDL mounts the export into each trial; assay mounts none, so every trial would fail
    # at its start (or run without the files): the submission is refused instead.
    before = cluster.client.list_experiments(limit=1000).experiments
    cfg = yaml.safe_load(config({"name": "random", "max_trials": 1}))
    mount = tmp_path / "nfs"
    nfs = {"server": "10.0.0.1", "path": "/", "container_mount_path": str(mount)}
    cfg["adaptdl"] = {"nfs": nfs}
    with pytest.raises(InvalidConfig) as info:
        cluster.submit(yaml.safe_dump(cfg), context(tmp_path))
    assert [str(d) for d in info.value.details] == [
        f"adaptdl.nfs: AdaptDL mounts the NFS export 10.0.0.1:/ into each trial at {mount}, and "
        f"assay mounts no NFS export: mount it at {mount} on every agent's host and remove nfs"
    ]
    # The same through NNI's config and the CLI: one line at the key written.
    code = context(tmp_path)
    (code / "space.json").write_text(json.dumps({"x": {"_type": "uniform", "_value": [0, 1]}}))
    nni_config = {
        "trainingServicePlatform": "adl",
        "searchSpacePath": "space.json",
        "maxTrialNum": 1,
        "tuner": {"builtinTunerName": "Random"},
        "trial": {
            "command": "python3 mnist.py",
            "codeDir": ".",
            "image": "img",
            "nfs": {"server": "10.0.0.1", "path": "/", "containerMountPath": "/mnt/data"},
        },
    }
    (code / "config.yml").write_text(yaml.safe_dump(nni_config))
    done = cluster.cli("experiment", "create", str(code / "config.yml"))
    assert done.returncode == 1, done.stdout
    assert done.stderr.strip().splitlines() == [
        "error: invalid NNI config: 1 problem",
        "  trial.nfs: AdaptDL mounts the NFS export 10.0.0.1:/ into each trial at /mnt/data, and "
        "assay mounts no NFS export: mount it at /mnt/data on every agent's host and remove nfs",
    ]
    assert cluster.client.list_experiments(limit=1000).experiments == before


def test_notes_and_durations_are_refused_when_malformed(cluster: Cluster, tmp_path: Path) -> None:
    from assay.errors import InvalidRequest

    with pytest.raises(InvalidRequest) as info:
        cluster.submit(
            config({"name": "random", "max_trials": 1}, max_duration="soon"), context(tmp_path)
        )
    assert "max_duration" in str(info.value.details[0].path)
    with pytest.raises(InvalidRequest) as info:
        cluster.submit(
            config({"name": "random", "max_trials": 1}), context(tmp_path), notes=["x"] * 101
        )
    assert info.value.details[0].path == "notes"


BUDGET_TRIAL = """\
import nni

params = nni.get_next_parameter()
print("BUDGET", params.get("TRIAL_BUDGET"), flush=True)
nni.report_final_result(params["x"])
"""


def test_hyperband_trials_get_their_budget_as_trial_budget(
    cluster: Cluster, tmp_path: Path
) -> None:
    # NNI's Hyperband R=9, eta=3 as its config reader maps it.
    searcher = {"name": "hyperband", "max_length": 9, "divisor": 3, "max_trials": 4}
    exp_id = cluster.submit(config(searcher), context(tmp_path, BUDGET_TRIAL))
    assert cluster.wait_state(exp_id, "COMPLETED", "ERROR", timeout=240).state == "COMPLETED"
    budgets = set()
    for trial in cluster.client.trials(exp_id):
        lines = cluster.trial_logs(trial.id)
        found = [int(line.split()[1]) for line in lines if line.startswith("BUDGET")]
        assert found, lines
        budgets.update(found)
    # Hyperband's rungs for R=9, eta=3: budgets 1, 3 and 9.
    assert budgets and budgets <= {1, 3, 9}


def test_trials_of_other_searchers_get_no_trial_budget(cluster: Cluster, tmp_path: Path) -> None:
    exp_id = cluster.submit(
        config({"name": "random", "max_trials": 1}), context(tmp_path, BUDGET_TRIAL)
    )
    assert cluster.wait_state(exp_id, "COMPLETED", "ERROR").state == "COMPLETED"
    [trial] = cluster.client.trials(exp_id)
    assert "BUDGET None" in cluster.trial_logs(trial.id)


SEQ_TRIAL = """\
import nni

params = nni.get_next_parameter()
seq = nni.get_sequence_id()
print("SEQ", seq, flush=True)
# Better than the final result: the best validation is not what nnictl shows.
nni.report_intermediate_result(params["x"] - 100)
if seq == 1:
    raise SystemExit("the second trial fails")
nni.report_final_result(params["x"])
"""


def test_nnictl_rows_show_final_results_of_succeeded_trials_and_their_sequence_ids(
    cluster: Cluster, tmp_path: Path
) -> None:
    note = 'a, "quoted" note'
    cfg = config(
        {"name": "random", "max_trials": 2, "max_concurrent_trials": 2},
        hyperparameters={"note": {"type": "const", "val": note}},
    )
    exp_id = cluster.submit(cfg, context(tmp_path, SEQ_TRIAL))
    cluster.wait_state(exp_id, "COMPLETED", "ERROR")
    trials = {t.id: t for t in cluster.client.trials(exp_id)}
    seq_of = {
        i: int(next(line.split()[1] for line in cluster.trial_logs(i) if line.startswith("SEQ")))
        for i in trials
    }
    assert sorted(seq_of.values()) == [0, 1]

    rows = json.loads(cluster.cli("nni", "trial", "ls", str(exp_id), "--json", check=True).stdout)
    view = json.loads(cluster.cli("nni", "view", str(exp_id), "--json", check=True).stdout)
    assert view["trials"] == rows
    for row in rows:
        trial = trials[row["trialJobId"]]
        assert row["sequenceId"] == seq_of[trial.id]
        if row["sequenceId"] == 1:
            assert row["status"] == "FAILED" and row["value"] is None
        else:
            assert row["status"] == "SUCCEEDED"
            assert row["value"] == pytest.approx(trial.hparams["x"])

    path = tmp_path / "export.csv"
    cluster.cli(
        "nni", "experiment", "export", str(exp_id), "-t", "csv", "-f", str(path), check=True
    )
    with path.open(newline="") as f:
        table = list(csv.DictReader(f))
    assert len(table) == 2
    for line in table:
        trial = trials[int(line["trialJobId"])]
        assert int(line["sequenceId"]) == seq_of[trial.id]
        assert line["note"] == note
        assert float(line["x"]) == pytest.approx(trial.hparams["x"])
        if seq_of[trial.id] == 1:
            assert line["status"] == "FAILED" and line["reward"] == ""
        else:
            assert float(line["reward"]) == pytest.approx(trial.hparams["x"])
