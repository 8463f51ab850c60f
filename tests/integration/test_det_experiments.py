"""Determined's own ``det experiment`` commands and its Python SDK (determined 0.38.1 from
PyPI) creating and driving experiments on a real master and agent, with only ``DET_MASTER``
and a sign-in set: create with a context (its ``.detignore`` kept), list, wait, describe's
reads, set, label, archive, pause and activate, kill, gc-policy (seed 001), continue, delete;
and an SDK script's everyday flow. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tarfile
import textwrap
from pathlib import Path

import httpx
import pytest
import yaml

from assay.context import pack_context
from tests.integration.cluster import CONTEXTS, Cluster, wait_for
from tests.integration.det_client import ALICE, DET_PYTHON, det, det_cluster, one_line

pytestmark = pytest.mark.integration

__all__ = ["det_cluster"]


def _config(name: str, batches: int, step_seconds: float = 0.01, **extra: object) -> str:
    return yaml.safe_dump(
        {
            "name": name,
            "entrypoint": "python3 train.py",
            "hyperparameters": {"checkpoint_every": 10, "step_seconds": step_seconds},
            "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": batches}},
            **extra,
        }
    )


def _context(tmp: Path) -> Path:
    """The Determined-style trial, with a file its ``.detignore`` leaves out."""
    ctx = tmp / "ctx"
    ctx.mkdir()
    shutil.copy(CONTEXTS / "determined" / "train.py", ctx / "train.py")
    (ctx / ".detignore").write_text("data/\n")
    (ctx / "data").mkdir()
    (ctx / "data" / "big.bin").write_bytes(b"\0" * 1024)
    return ctx


def _created(result: subprocess.CompletedProcess[str]) -> int:
    assert result.returncode == 0, result
    found = re.search(r"Created experiment (\d+)", result.stdout)
    assert found, result.stdout
    return int(found.group(1))


def _state(cluster: Cluster, exp_id: int) -> str:
    return str(cluster.client.experiment(exp_id).state)


def test_det_creates_waits_lists_sets_and_deletes_an_experiment(
    det_cluster: Cluster, tmp_path: Path
) -> None:
    c = det_cluster
    # Every checkpoint kept to the end (10, 20 without a validation; 30 with one), for the
    # gc-policy preview below.
    (tmp_path / "exp.yaml").write_text(
        _config("from-det", 30, checkpoint_storage={"save_trial_latest": 3})
    )
    ctx = _context(tmp_path)
    exp_id = _created(
        det(c, tmp_path, "e", "create", str(tmp_path / "exp.yaml"), str(ctx), **ALICE)
    )
    waited = det(c, tmp_path, "e", "wait", str(exp_id), "--polling-interval", "1", **ALICE)
    assert waited.returncode == 0, (waited, c.log("master")[-3000:])
    exp = c.client.experiment(exp_id)
    assert exp.state == "COMPLETED" and exp.owner == "alice"
    model_def = det(
        c, tmp_path, "e", "download-model-def", str(exp_id), "--output-dir", str(tmp_path), **ALICE
    )
    assert model_def.returncode == 0, model_def
    with tarfile.open(tmp_path / f"experiment_{exp_id}_model_def.tgz") as tar:
        names = sorted(m.name.removeprefix("./") for m in tar.getmembers() if m.isfile())
    assert names == ["train.py"], names

    listed = det(c, tmp_path, "e", "list", **ALICE)
    rows = [[cell.strip() for cell in line.split("|")] for line in listed.stdout.splitlines()[2:]]
    assert [r[:5] for r in rows] == [[str(exp_id), "alice", "from-det", "", "COMPLETED"]], listed
    assert rows[0][5] == "100.0%" and rows[0][8] == "default"  # the pool it ran in

    for args, said in [
        (("set", "description", str(exp_id), "first run"), "Set description"),
        (("set", "name", str(exp_id), "renamed"), "Set name"),
        (("label", "add", str(exp_id), "baseline"), "Added label"),
        (("archive", str(exp_id)), "Archived experiment"),
    ]:
        done = det(c, tmp_path, "e", *args, **ALICE)
        assert done.returncode == 0 and said in done.stdout, done
    exp = c.client.experiment(exp_id)
    assert (exp.name, exp.description, exp.labels, exp.archived) == (
        "renamed",
        "first run",
        ["baseline"],
        True,
    )
    hidden = det(c, tmp_path, "e", "list", **ALICE)
    assert str(exp_id) not in hidden.stdout.split("\n", 2)[-1], hidden
    everyone = det(c, tmp_path, "e", "list", "--all", "--csv", **ALICE)
    assert f"{exp_id},alice,renamed" in everyone.stdout and ",True" in everyone.stdout
    assert det(c, tmp_path, "e", "unarchive", str(exp_id), **ALICE).returncode == 0

    logs = det(c, tmp_path, "e", "logs", str(exp_id), **ALICE)
    assert "done at step 30" in logs.stdout, logs

    # Trained further from its latest checkpoint, in a new experiment (assay's continue).
    more = det(
        c, tmp_path, "e", "continue", str(exp_id), "--config", "searcher.max_length.batches=40",
        **ALICE,
    )  # fmt: skip
    assert more.returncode == 0 and f"Continued experiment {exp_id}" in more.stdout, more
    newest = max(e.id for e in c.client.list_experiments(limit=100).experiments)
    assert newest != exp_id and c.wait_state(newest, "COMPLETED", "ERROR").state == "COMPLETED"
    (continued,) = c.client.trials(newest)
    resumed = c.trial_logs(int(continued.id))
    assert "started at step 30 run 1" in resumed and "done at step 40" in resumed, resumed

    # Seed 001: delete every checkpoint of an experiment that is done with them, the
    # checkpoints it would delete shown first.
    gc = det(
        c, tmp_path, "e", "set", "gc-policy", "--save-experiment-best", "0",
        "--save-trial-best", "0", "--save-trial-latest", "0", str(exp_id), stdin="y\n",
        **ALICE,
    )  # fmt: skip
    assert gc.returncode == 0 and "Set GC policy" in gc.stdout, gc
    shown = "will delete 1 checkpoints with validations and 2 checkpoints without validations"
    assert shown in gc.stdout and " COMPLETED " in gc.stdout, gc.stdout
    left = c.client.experiment_checkpoints(exp_id)
    assert [ck.state for ck in left] == ["DELETED"] * 3, left

    deleted = det(c, tmp_path, "e", "delete", str(exp_id), "--yes", **ALICE)
    assert deleted.returncode == 0, deleted
    gone = det(c, tmp_path, "e", "describe", str(exp_id), **ALICE)
    assert f"experiment {exp_id}" in one_line(gone)


def test_det_pauses_activates_kills_and_another_user_is_refused(
    det_cluster: Cluster, tmp_path: Path
) -> None:
    c = det_cluster
    (tmp_path / "slow.yaml").write_text(_config("slow", 100_000, step_seconds=0.05))
    exp_id = _created(
        det(
            c,
            tmp_path,
            "e",
            "create",
            str(tmp_path / "slow.yaml"),
            str(_context(tmp_path)),
            "--paused",
            **ALICE,
        )
    )
    assert _state(c, exp_id) == "PAUSED"
    assert det(c, tmp_path, "e", "activate", str(exp_id), **ALICE).returncode == 0
    wait_for("a trial to run", lambda: any(t.state == "RUNNING" for t in c.client.trials(exp_id)))
    assert det(c, tmp_path, "e", "pause", str(exp_id), **ALICE).returncode == 0
    assert _state(c, exp_id) == "PAUSED"
    for setting, value in (("max-slots", "1"), ("priority", "10")):
        changed = det(c, tmp_path, "e", "set", setting, str(exp_id), value, **ALICE)
        assert changed.returncode == 0, changed
    # Not alice's experiment: the admin may, another user may not.
    c.add_user("mallory", "Mallory-pass-1")
    refused = det(
        c, tmp_path / "m", "e", "kill", str(exp_id), DET_USER="mallory", DET_PASS="Mallory-pass-1"
    )
    assert "alice" in one_line(refused) or "owner" in one_line(refused)
    assert det(c, tmp_path, "e", "kill", str(exp_id), **ALICE).returncode == 0
    c.wait_state(exp_id, "CANCELED", timeout=60)


def test_an_sdk_script_creates_waits_downloads_its_best_checkpoint_and_lists(
    det_cluster: Cluster, tmp_path: Path
) -> None:
    c = det_cluster
    ctx = _context(tmp_path)
    script = tmp_path / "flow.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import json, pathlib
            from determined.experimental import client

            client.login(master={c.url + "/det"!r}, user="alice", password="Alice-pass-1")
            config = json.loads({json.dumps(yaml.safe_load(_config("sdk", 20)))!r})
            exp = client.create_experiment(config=config, model_dir={str(ctx)!r})
            state = exp.wait(interval=0.5)
            best = exp.top_checkpoint()
            path = best.download({str(tmp_path / "best")!r})
            steps = json.loads((pathlib.Path(path) / "state.json").read_text())["steps"]
            names = [e.name for e in client.list_experiments()]
            print(json.dumps({{"id": exp.id, "state": state.value, "steps": steps,
                               "names": names}}))
            """
        )
    )
    done = subprocess.run(
        [str(DET_PYTHON), str(script)],
        capture_output=True,
        text=True,
        timeout=180,
        env={"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config")},
        check=False,
    )
    assert done.returncode == 0, (done.stderr[-3000:], c.log("master")[-3000:])
    said = yaml.safe_load(done.stdout.strip().splitlines()[-1])
    assert said["state"] == "STATE_COMPLETED" or said["state"] == "COMPLETED", said
    assert said["steps"] == 20 and "sdk" in said["names"]


IN_TRIAL = """
import json, os, sys, urllib.error, urllib.request

# As in a trial's Python that has Determined's own package installed: after assay's on the path.
sys.path.append(os.environ["REAL_DETERMINED"])
import determined as det


def main():
    # Imported here, not at the top: the submission check would look for Determined's own
    # package on the agents, and this test's agents run assay's Python without it.
    from determined.experimental import client

    exp = client.get_experiment(int(os.environ["ASSAY_EXPERIMENT_ID"]))
    me = client.whoami()
    print("sdk in trial: " + json.dumps({"name": exp.name, "user": me.username,
          "trials": [t.id for t in exp.list_trials()]}), flush=True)
    token = os.environ["DET_USER_TOKEN"]
    own = urllib.request.Request(os.environ["ASSAY_MASTER"] + "/api/v1/experiments",
                                 headers={"Authorization": "Bearer " + token})
    try:
        status = urllib.request.urlopen(own).status
    except urllib.error.HTTPError as exc:
        status = exc.code
    print("own api:", status, flush=True)
    print("token: " + token, flush=True)
    with det.core.init() as core:
        for op in core.searcher.operations():
            core.train.report_validation_metrics(op.length, {"loss": 0.5})
            op.report_completed(0.5)


main()
"""


def test_determineds_own_client_inside_a_trial_acts_as_the_owner(
    det_cluster: Cluster, tmp_path: Path
) -> None:
    c = det_cluster
    (tmp_path / "ctx").mkdir()
    (tmp_path / "ctx" / "train.py").write_text(IN_TRIAL)
    site = next((DET_PYTHON.parents[1] / "lib").glob("python3*/site-packages"))
    config = yaml.safe_load(_config("in-trial", 1))
    config["environment"] = {"environment_variables": [f"REAL_DETERMINED={site}"]}
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump(config))
    exp_id = _created(
        det(c, tmp_path, "e", "create", str(tmp_path / "exp.yaml"), str(tmp_path / "ctx"), **ALICE)
    )
    exp = c.wait_state(exp_id, "COMPLETED", "ERROR", timeout=120)
    (trial,) = c.client.trials(exp_id)
    logs = c.trial_logs(int(trial.id))
    assert exp.state == "COMPLETED", logs[-30:]
    said = next(line for line in logs if line.startswith("sdk in trial: "))
    seen = json.loads(said.removeprefix("sdk in trial: "))
    assert seen == {"name": "in-trial", "user": "alice", "trials": [int(trial.id)]}
    # The allocation's token acts as alice under /det only while it lives, never on assay's own
    # API (the trial tried it: 403).
    assert seen_own_api(logs) == 403
    token = next(line for line in logs if line.startswith("token: ")).removeprefix("token: ")
    after = httpx.get(f"{c.url}/det/api/v1/me", headers={"Authorization": f"Bearer {token}"})
    assert after.status_code == 401, after.text


def seen_own_api(logs: list[str]) -> int:
    return int(next(line for line in logs if line.startswith("own api: ")).split()[-1])


IN_TASK = """
import json, os, subprocess, sys, urllib.error, urllib.request

# As in a notebook whose Python has Determined's own package installed too.
sys.path.append(sys.argv[1])
from determined.experimental import client

# What a notebook's or shell's user does: no sign-in, the task's own DET_* variables.
me = client.whoami()
exps = [e.name for e in client.list_experiments()]
det = (f"import sys; sys.path.append({sys.argv[1]!r}); sys.argv[0] = 'det'; "
       "from determined.cli.__main__ import main; sys.exit(main())")
cli = subprocess.run([sys.executable, "-c", det, "user", "whoami"], capture_output=True,
                     text=True)
token = os.environ["DET_USER_TOKEN"]
own = urllib.request.Request(os.environ["ASSAY_MASTER"] + "/api/v1/experiments",
                             headers={"Authorization": "Bearer " + token})
try:
    status = urllib.request.urlopen(own).status
except urllib.error.HTTPError as exc:
    status = exc.code
print("in task: " + json.dumps({"user": me.username, "env_user": os.environ["DET_USER"],
      "experiments": exps, "cli": cli.stdout.strip(), "own_api": status, "token": token}),
      flush=True)
"""


def test_determineds_client_in_a_task_acts_as_its_owner_while_the_task_runs(
    det_cluster: Cluster, tmp_path: Path
) -> None:
    c = det_cluster
    alice = c.sign_in("alice", "Alice-pass-1")
    ctx = tmp_path / "task"
    ctx.mkdir()
    (ctx / "in_task.py").write_text(IN_TASK)
    site = next((DET_PYTHON.parents[1] / "lib").glob("python3*/site-packages"))
    entrypoint = f"python3 in_task.py {site}"
    task = alice.submit_job(
        yaml.safe_dump({"entrypoint": entrypoint, "resources": {"slots": 0}}),
        kind="command",
        context=pack_context(ctx).data,
    )
    ended = wait_for(
        f"task {task.id} to end", lambda: (t := c.client.task(task.id)).state.terminal and t
    )
    lines = [e.line for e in c.client.task_logs(task.id)]
    assert ended.state == "SUCCEEDED", lines[-30:]
    said = next(line for line in lines if line.startswith("in task: "))
    seen = json.loads(said.removeprefix("in task: "))
    assert (seen["user"], seen["env_user"]) == ("alice", "alice")
    assert "You are logged in as user 'alice'" in seen["cli"], seen["cli"]
    assert isinstance(seen["experiments"], list)
    # Determined's API only, and only while the task runs: assay's own API signs no one in
    # with it (401), and once the task has ended neither does Determined's.
    assert seen["own_api"] == 401
    after = httpx.get(
        f"{c.url}/det/api/v1/me", headers={"Authorization": f"Bearer {seen['token']}"}
    )
    assert after.status_code == 401, after.text
