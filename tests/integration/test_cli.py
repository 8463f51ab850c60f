"""The ``assay`` command against a real cluster, as a user runs it."""

from __future__ import annotations

import io
import json
import os
import pty
import shutil
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import pytest
import yaml

from assay.errors import InvalidConfig, InvalidContext
from tests.integration.cluster import CONTEXTS, ROOT, Cluster, wait_for

pytestmark = pytest.mark.integration

COUNTER = CONTEXTS / "counter"


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def no_experiments(cluster: Cluster) -> bool:
    return cluster.client.list_experiments(archived=True).pagination.total == 0


def test_digits_example_completes_through_the_cli(cluster: Cluster) -> None:
    examples = ROOT / "examples" / "digits"
    result = cluster.cli("e", "create", str(examples / "random.yaml"), str(examples), "--follow")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ended COMPLETED" in result.stdout
    assert "best trial:" in result.stdout
    assert "best checkpoint:" in result.stdout
    listing = json.loads(cluster.cli("e", "list", "--json", check=True).stdout)
    exp = listing["experiments"][0]
    assert exp["state"] == "COMPLETED" and exp["trials"] == {"COMPLETED": 8}
    described = json.loads(
        cluster.cli("e", "describe", str(exp["id"]), "--json", check=True).stdout
    )
    assert len(described["trial_list"]) == 8
    assert all(t["steps_completed"] == 400 for t in described["trial_list"])
    best = described["best_trial"]
    assert best["best_validation"] == min(t["best_validation"] for t in described["trial_list"])
    assert best["best_validation"] < 0.5, "the network should learn the digits"
    logs = cluster.cli("t", "logs", str(best["id"]), check=True).stdout
    assert "training to the searcher's lengths" in logs
    ckpts = cluster.cli(
        "e", "list-checkpoints", str(exp["id"]), "--best", "1", "--json", check=True
    )
    assert json.loads(ckpts.stdout)[0]["trial_id"] == best["id"]


def test_config_with_three_mistakes_gets_one_message_naming_all_three(
    cluster: Cluster, tmp_path: Path
) -> None:
    config = write_config(
        tmp_path,
        """
        name: three-mistakes
        entrypoint: python3 train.py
        max_restart: 3
        resources:
          slots_per_trial: two
        searcher:
          name: random
          metric: loss
          max_trials: 0
        """,
    )
    result = cluster.cli("e", "create", str(config), str(COUNTER))
    assert result.returncode == 1
    err = result.stderr
    assert "3 problems" in err, err
    assert "max_restart: unknown key (did you mean max_restarts?)" in err
    assert "resources.slots_per_trial: must be an integer" in err
    assert "searcher.max_trials: must be >= 1, got 0" in err
    assert no_experiments(cluster)
    # The master checks too, for clients that skip the CLI's own check.
    with pytest.raises(InvalidConfig) as caught:
        cluster.client.create_experiment(config.read_text(), b"")
    assert {d.path for d in caught.value.details} == {
        "max_restart",
        "resources.slots_per_trial",
        "searcher.max_trials",
    }
    assert no_experiments(cluster)


def test_unknown_resource_pool_is_refused_with_the_pools_there_are(cluster: Cluster) -> None:
    config = textwrap.dedent(
        """
        entrypoint: python3 train.py
        resources: {resource_pool: gpus}
        searcher: {name: single, metric: loss, max_length: {batches: 1}}
        """
    )
    with pytest.raises(
        InvalidConfig, match="unknown resource pool 'gpus'; this cluster has: default"
    ):
        cluster.submit(config)
    assert no_experiments(cluster)


def test_oversized_context_is_refused_before_upload(cluster: Cluster, tmp_path: Path) -> None:
    context = tmp_path / "big"
    context.mkdir()
    (context / "train.py").write_text("print('hi')\n")
    with (context / "weights.bin").open("wb") as f:
        f.truncate(120 * 2**20)  # sparse: costs no disk
    config = write_config(
        tmp_path,
        """
        entrypoint: python3 train.py
        searcher: {name: single, metric: loss, max_length: {batches: 1}}
        """,
    )
    result = cluster.cli("e", "create", str(config), str(context))
    assert result.returncode == 1
    assert "over the 95 MiB limit" in result.stderr
    assert "weights.bin (120.0 MiB)" in result.stderr
    assert ".assayignore" in result.stderr
    assert no_experiments(cluster)
    (context / ".assayignore").write_text("*.bin\n")
    ok = cluster.cli("e", "create", str(config), str(context), "--follow")
    assert ok.returncode == 0, ok.stderr


def test_a_grid_over_the_masters_limit_is_refused_before_the_context_is_packed(
    cluster: Cluster, tmp_path: Path
) -> None:
    config = write_config(
        tmp_path,
        """
        entrypoint: python3 train.py
        hyperparameters:
          a: {type: double, minval: 0, maxval: 1, count: 500}
          b: {type: double, minval: 0, maxval: 1, count: 500}
        searcher: {name: grid, metric: loss, max_length: {batches: 1}}
        """,
    )
    # The CLI checks against the master's limit (100,000 by default), not the most any master
    # takes: the directory, which does not exist, is never looked at.
    result = cluster.cli("e", "create", str(config), str(tmp_path / "not-there"))
    assert result.returncode == 1
    assert "the grid has 250,000 points, over the limit of 100,000 (this master's limit" in (
        result.stderr
    ), result.stderr
    assert "not-there" not in result.stderr
    assert no_experiments(cluster)


def test_tarball_escaping_its_root_is_refused_and_nothing_is_created(cluster: Cluster) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        payload = b"owned\n"
        info = tarfile.TarInfo("../../outside.txt")
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    config = "entrypoint: python3 train.py\nsearcher: {name: single, metric: loss}\n"
    with pytest.raises(InvalidContext, match=r"\.\./\.\./outside\.txt"):
        cluster.client.create_experiment(config, buf.getvalue())
    assert no_experiments(cluster)


def test_cli_says_in_one_line_when_no_master_answers(cluster: Cluster) -> None:
    result = cluster.cli("-m", "http://127.0.0.1:9", "e", "list")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert "http://127.0.0.1:9" in lines[0] and "connection refused" in lines[0]


def test_paused_creation_then_activate_wait_and_follow_logs(
    cluster: Cluster, tmp_path: Path
) -> None:
    config = write_config(
        tmp_path,
        """
        entrypoint: python3 train.py
        hyperparameters: {step_seconds: 0.01}
        searcher: {name: single, metric: loss, max_length: {batches: 60}}
        """,
    )
    created = cluster.cli(
        "e", "create", str(config), str(COUNTER), "--paused", "--json", check=True
    )
    exp = json.loads(created.stdout)
    assert exp["state"] == "PAUSED"
    listed = json.loads(cluster.cli("e", "list", "--json", check=True).stdout)
    params = {"archived": "false", "limit": 100, "offset": 0}
    assert listed == cluster.client.http.get("/api/v1/experiments", params=params), (
        "--json prints what the master answered"
    )
    assert cluster.client.trials(exp["id"]) == [], "a paused experiment starts no trial"
    cluster.cli("e", "activate", str(exp["id"]), check=True)
    trial_id = wait_for("a trial", lambda: cluster.client.trials(exp["id"]))[0].id
    followed = cluster.cli("t", "logs", str(trial_id), "--follow", check=True)
    assert "done at step 60" in followed.stdout
    waited = cluster.cli("e", "wait", str(exp["id"]))
    assert waited.returncode == 0 and "COMPLETED" in waited.stdout
    all_logs = cluster.cli("e", "logs", str(exp["id"]), "--follow", check=True).stdout
    assert f"[trial {trial_id}] done at step 60" in all_logs


def test_config_overrides_apply_and_config_shows_the_result(
    cluster: Cluster, tmp_path: Path
) -> None:
    config = write_config(
        tmp_path,
        """
        entrypoint: python3 train.py
        searcher: {name: single, metric: loss, max_length: {batches: 500}}
        """,
    )
    created = cluster.cli(
        "e",
        "create",
        str(config),
        str(COUNTER),
        "--config",
        "searcher.max_length.batches=20",
        "--config",
        "hyperparameters.step_seconds=0.001",
        "--follow",
    )
    assert created.returncode == 0, created.stderr
    exp_id = cluster.client.list_experiments().experiments[0].id
    shown = cluster.cli("e", "config", str(exp_id), check=True).stdout
    assert "batches: 20" in shown
    trial = cluster.client.trials(exp_id)[0]
    assert trial.steps_completed == 20


def run_with_terminal_stderr(cluster: Cluster, *args: str) -> tuple[int, str, str]:
    """Run ``assay`` with stderr on a pseudo-terminal (stdout piped): exit code, stdout, and what
    the terminal received."""
    main_fd, term_fd = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-c", "from assay.cli import main; main()", *args],
        env={**cluster.env, "COLUMNS": "120", "TERM": "xterm-256color"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=term_fd,
        cwd=ROOT,
    )
    os.close(term_fd)
    screen = bytearray()
    while True:
        try:
            data = os.read(main_fd, 65536)
        except OSError:  # EIO: the command closed its end
            break
        if not data:
            break
        screen += data
    os.close(main_fd)
    stdout = proc.communicate(timeout=120)[0]
    return proc.returncode, stdout.decode(), screen.decode(errors="replace")


def test_big_context_upload_shows_a_progress_bar_on_a_terminal_only(
    cluster: Cluster, tmp_path: Path
) -> None:
    context = tmp_path / "big"
    shutil.copytree(COUNTER, context)
    (context / "noise.bin").write_bytes(os.urandom(6 * 2**20))  # does not compress
    config = write_config(
        tmp_path,
        """
        entrypoint: python3 train.py
        searcher: {name: single, metric: loss, max_length: {batches: 1}}
        """,
    )
    code, out, screen = run_with_terminal_stderr(
        cluster, "e", "create", str(config), str(context), "--paused"
    )
    assert code == 0, out + screen
    assert "uploading context" in screen and "MiB" in screen, screen
    assert "created experiment" in out
    piped = cluster.cli("e", "create", str(config), str(context), "--paused", check=True)
    assert piped.stderr == "", "nothing but errors goes to a stderr that is not a terminal"
    assert "created experiment" in piped.stdout
    (context / "noise.bin").unlink()
    code, out, screen = run_with_terminal_stderr(
        cluster, "e", "create", str(config), str(context), "--paused"
    )
    assert code == 0 and "uploading context" not in screen, "a small context needs no bar"


def test_best_checkpoints_are_ranked_by_the_validation_at_their_step_largest_first(
    cluster: Cluster,
) -> None:
    config = {
        "name": "best-checkpoints",
        "entrypoint": "python3 train.py",
        # Each trial validates loss = x / steps at steps 10, 20 and 30, checkpointing each time.
        "hyperparameters": {
            "x": {"type": "categorical", "vals": [1, 4]},
            "code_driven_steps": 30,
            "checkpoint_every": 10,
            "step_seconds": 0.001,
        },
        "searcher": {
            "name": "grid",
            "metric": "loss",
            "smaller_is_better": False,
            "max_length": {"batches": 30},
        },
        "max_restarts": 0,
    }
    exp_id = cluster.submit(yaml.safe_dump(config))
    exp = cluster.wait_state(exp_id, "COMPLETED", "ERROR", timeout=240)
    assert exp.state == "COMPLETED", exp
    x_of = {int(t.id): t.hparams["x"] for t in cluster.client.trials(exp_id)}
    # The GC policy (save_trial_best 1, save_trial_latest 1) deletes each trial's step-20
    # checkpoint once the experiment ends: deleted checkpoints are not listed as best.
    wait_for(
        "the step-20 checkpoints deleted",
        lambda: all(
            c.state == "DELETED"
            for c in cluster.client.experiment_checkpoints(exp_id)
            if c.steps_completed == 20
        ),
        timeout=60,
    )
    listed = cluster.cli("e", "list-checkpoints", str(exp_id), "--best", "4", "--json", check=True)
    ranked = [(x_of[ck["trial_id"]], ck["steps_completed"]) for ck in json.loads(listed.stdout)]
    # 4/10, 4/30, 1/10, 1/30: the largest losses first, as the searcher asks.
    assert ranked == [(4, 10), (4, 30), (1, 10), (1, 30)]
    table = cluster.cli("e", "list-checkpoints", str(exp_id), "--best", "2", check=True).stdout
    assert "loss" in table and "0.4" in table and "0.133333" in table and "0.1 " not in table
    refused = cluster.cli("e", "list-checkpoints", str(exp_id), "--best", "0")
    assert refused.returncode != 0


def test_following_an_experiment_whose_every_trial_failed_shows_why(
    cluster: Cluster, tmp_path: Path
) -> None:
    context = tmp_path / "broken"
    context.mkdir()
    (context / "train.py").write_text(
        "import sys\nprint('loading data')\nsys.exit('the dataset directory /nowhere is missing')\n"
    )
    config = write_config(
        tmp_path,
        """
        entrypoint: python3 train.py
        searcher: {name: single, metric: loss, max_length: {batches: 1}}
        max_restarts: 0
        """,
    )
    result = cluster.cli("e", "create", str(config), str(context), "--follow")
    assert result.returncode == 1, result.stdout + result.stderr
    trial_id = cluster.client.trials(1)[0].id
    assert f"trial {trial_id}" in result.stdout
    assert "the dataset directory /nowhere is missing" in result.stdout
    # The failing trial and where its log is are said once, not by the message and again below.
    assert result.stdout.count(f"assay trial logs {trial_id}") == 1, result.stdout
    assert result.stdout.count("every trial failed") == 1, result.stdout
