"""Determined's own ``det checkpoint``, ``det experiment list-checkpoints`` and ``det model``
commands and its Python SDK's checkpoint and registry calls (determined 0.38.1 from PyPI) on a
real master and agent, with only ``DET_MASTER`` and a sign-in set: list (``--best``),
describe, download (straight from the shared file system and through the master; the files
are what the trial saved), delete, and the model registry. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
import re
import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml

from tests.integration.cluster import CONTEXTS, Cluster
from tests.integration.det_client import ALICE, DET_PYTHON, det, det_cluster, one_line

pytestmark = pytest.mark.integration

__all__ = ["det_cluster"]

SAVED = {10: {"steps": 10}, 20: {"steps": 20}}
"""What the trial saves in ``state.json`` at each of its checkpoints."""


@pytest.fixture(scope="module")
def finished(
    det_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> tuple[int, int, dict[int, str]]:
    """An experiment (created with assay's own command) whose one trial of 20 steps saved
    checkpoints at steps 10 and 20 and validated at 20 (loss 1/20), both kept: its id, the
    trial's, and the checkpoints' uuids by step."""
    c = det_cluster
    config = tmp_path_factory.mktemp("cfg") / "ckpt.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "name": "det-checkpoints",
                "entrypoint": "python3 train.py",
                "hyperparameters": {"checkpoint_every": 10, "step_seconds": 0.01},
                "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 20}},
                "checkpoint_storage": {"save_trial_latest": 2},
            }
        )
    )
    created = c.cli("experiment", "create", str(config), str(CONTEXTS / "determined"))
    found = re.search(r"experiment (\d+)", created.stdout + created.stderr, re.IGNORECASE)
    assert created.returncode == 0 and found, created
    exp_id = int(found.group(1))
    assert c.client.wait(exp_id, timeout=120) == "COMPLETED"
    (trial,) = c.client.trials(exp_id)
    by_step = {ck.steps_completed: ck.uuid for ck in c.client.experiment_checkpoints(exp_id)}
    assert sorted(by_step) == [10, 20]
    return exp_id, trial.id, by_step


def _admin(c: Cluster) -> dict[str, str]:
    return {"DET_USER": "admin", "DET_PASS": c.admin_password}


def _ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result
    return result.stdout


def _saved(directory: Path) -> dict[str, int]:
    return dict(json.loads((directory / "state.json").read_text()))


def test_det_lists_describes_downloads_and_deletes_checkpoints(
    det_cluster: Cluster, finished: tuple[int, int, dict[int, str]], tmp_path: Path
) -> None:
    c = det_cluster
    exp_id, trial_id, by_step = finished
    admin = _admin(c)

    listed = _ok(det(c, tmp_path, "experiment", "list-checkpoints", str(exp_id), **admin))
    rows = [line for line in listed.splitlines() if any(u in line for u in by_step.values())]
    assert len(rows) == 2 and all("COMPLETED" in row and "state.json" in row for row in rows)
    best = _ok(det(c, tmp_path, "e", "lc", str(exp_id), "--best", "1", **admin))
    (row,) = [line for line in best.splitlines() if any(u in line for u in by_step.values())]
    assert by_step[20] in row and "0.05" in row, best  # the validated one, its loss 1/20

    described = _ok(det(c, tmp_path, "checkpoint", "describe", by_step[20], **admin))
    assert str(exp_id) in described and str(trial_id) in described, described
    assert '"loss": 0.05' in described and '"steps_completed": 20' in described

    for mode in ("auto", "master"):
        out = tmp_path / mode
        got = det(
            c,
            tmp_path,
            "checkpoint",
            "download",
            by_step[20],
            "-o",
            str(out),
            "--mode",
            mode,
            "-q",
            **admin,
        )
        assert _ok(got).strip() == str(out)
        assert _saved(out) == SAVED[20], mode

    missing = det(c, tmp_path, "checkpoint", "describe", "no-such-uuid", **admin)
    assert "no-such-uuid" in one_line(missing)
    theirs = det(c, tmp_path / "alice", "checkpoint", "delete", by_step[10], "--yes", **ALICE)
    assert "admin" in one_line(theirs)
    deleted = det(c, tmp_path, "checkpoint", "delete", by_step[10], "--yes", **admin)
    assert "is in progress" in _ok(deleted)
    left = _ok(det(c, tmp_path, "e", "lc", str(exp_id), **admin))
    assert "DELETED" in next(line for line in left.splitlines() if by_step[10] in line)


def test_det_model_creates_registers_and_describes_versions(
    det_cluster: Cluster, finished: tuple[int, int, dict[int, str]], tmp_path: Path
) -> None:
    c = det_cluster
    _, trial_id, by_step = finished
    admin = _admin(c)

    made = _ok(det(c, tmp_path, "model", "create", "digits", "--description", "mnist", **admin))
    assert "digits" in made and "mnist" in made
    again = det(c, tmp_path, "model", "create", "digits", **admin)
    assert "already exists" in one_line(again)
    assert "digits" in _ok(det(c, tmp_path, "model", "list", **admin))

    registered = _ok(det(c, tmp_path, "model", "register-version", "digits", by_step[20], **admin))
    assert by_step[20] in registered and str(trial_id) in registered
    versions = _ok(det(c, tmp_path, "model", "list-versions", "digits", **admin))
    assert by_step[20] in versions and '"loss": 0.05' in versions, versions
    described = _ok(det(c, tmp_path, "model", "describe", "digits", **admin))
    assert by_step[20] in described, "describe shows the latest version"
    as_json = json.loads(
        _ok(det(c, tmp_path, "model", "list-versions", "digits", "--json", **admin))
    )
    assert [v["version"] for v in as_json["modelVersions"]] == [1]

    unknown = det(c, tmp_path, "model", "describe", "nope", **admin)
    assert "nope" in one_line(unknown)
    bad = det(c, tmp_path, "model", "register-version", "digits", "not-a-uuid", **admin)
    assert "not-a-uuid" in one_line(bad)


def test_the_sdk_downloads_the_top_checkpoint_and_registers_it(
    det_cluster: Cluster, finished: tuple[int, int, dict[int, str]], tmp_path: Path
) -> None:
    c = det_cluster
    exp_id, trial_id, by_step = finished
    sdk = textwrap.dedent(
        f"""
        import json, warnings
        from determined.experimental import client
        warnings.simplefilter("ignore")
        client.login()
        top = client.get_experiment({exp_id}).top_checkpoint()
        auto = top.download("{tmp_path}/auto", mode=client.DownloadMode.AUTO)
        master = top.download("{tmp_path}/master", mode=client.DownloadMode.MASTER)
        trial_top = client.get_trial({trial_id}).top_checkpoint()
        listed = client.get_trial({trial_id}).list_checkpoints()
        one = client.get_checkpoint("{by_step[10]}")
        model = client.create_model("sdk-model", description="from the SDK")
        version = client.get_model("sdk-model").register_version(top.uuid)
        latest = client.get_model(model.model_id).get_version()
        print(json.dumps({{
            "top": top.uuid, "auto": auto, "master": master, "trial_top": trial_top.uuid,
            "listed": [c.uuid for c in listed], "one": [one.uuid, one.metadata],
            "version": [version.model_version, version.checkpoint.uuid],
            "latest": [latest.model_version, latest.checkpoint.training.trial_id],
        }}))
        """
    )
    ran = subprocess.run(
        [str(DET_PYTHON), "-c", sdk],
        env={"DET_MASTER": f"{c.url}/det", "HOME": str(tmp_path), **_admin(c)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ran.returncode == 0, ran
    read = json.loads(ran.stdout.strip().splitlines()[-1])
    assert read["top"] == read["trial_top"] == by_step[20]
    for mode in ("auto", "master"):
        assert read[mode] == str(tmp_path / mode)
        assert _saved(tmp_path / mode) == SAVED[20], mode
    # The best first; the one without a validation after it, unless deleted already.
    assert read["listed"][0] == by_step[20] and set(read["listed"]) <= set(by_step.values())
    assert read["one"][0] == by_step[10]
    assert read["version"] == [1, by_step[20]] and read["latest"] == [1, trial_id]
