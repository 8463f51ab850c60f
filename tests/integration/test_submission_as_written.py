"""What a submission keeps and what it refuses, on a real master: an NNI experiment shows its
config.yml as written (from the CLI and from an upload as the web UI sends it), and an
entrypoint whose Python script is not in the context is refused before anything runs, by the
check (`POST /experiments/validate`), by creation and by `assay e create`."""

from __future__ import annotations

import json
import tarfile
from io import BytesIO
from pathlib import Path

import httpx
import pytest
import yaml

from assay.context import pack_context
from assay.errors import InvalidConfig
from tests.integration.cluster import Cluster

pytestmark = pytest.mark.integration

NNI_CONFIG = """\
# The config as its author wrote it, comment and all.
experimentName: nni-as-written
searchSpaceFile: search_space.json
trialCommand: python3 trial.py
trialCodeDirectory: code
trialConcurrency: 1
maxTrialNumber: 2
tuner:
  name: Random
trainingService:
  platform: local
"""


def nni_project(tmp_path: Path) -> Path:
    """An NNI project: config.yml beside the search space and a code directory."""
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "trial.py").write_text("import nni\nnni.report_final_result(1.0)\n")
    space = {"x": {"_type": "loguniform", "_value": [0.001, 1]}}
    (tmp_path / "search_space.json").write_text(json.dumps(space))
    path = tmp_path / "config.yml"
    path.write_text(NNI_CONFIG)
    return path


def test_an_nni_config_created_with_the_cli_shows_the_file_as_written(
    cluster: Cluster, tmp_path: Path
) -> None:
    path = nni_project(tmp_path)
    out = cluster.cli("experiment", "create", str(path), "--paused", "--json", check=True)
    exp = cluster.client.experiment(int(json.loads(out.stdout)["id"]))
    assert exp.original_config == NNI_CONFIG
    assert exp.config["entrypoint"] == "python3 trial.py"


def test_an_nni_config_uploaded_as_the_web_ui_sends_it_shows_the_file_as_written(
    cluster: Cluster, tmp_path: Path
) -> None:
    nni_project(tmp_path)
    # The web UI sends the config as written with its directory; the master reads it.
    exp = cluster.client.create_experiment(NNI_CONFIG, pack_context(tmp_path).data, activate=False)
    assert exp.original_config == NNI_CONFIG
    assert exp.config["entrypoint"] == "python3 trial.py"


CONFIG = {
    "name": "nested",
    "entrypoint": "python3 train.py --epochs 1",
    "searcher": {"name": "single", "metric": "loss", "max_length": 1},
    "resources": {"slots_per_trial": 0},
}


def nested_context() -> bytes:
    """`tar czf x.tgz -C examples digits`: the files sit under one top-level folder."""
    buf = BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name in ("digits/train.py", "digits/model.py"):
            tar.addfile(tarfile.TarInfo(name), BytesIO(b""))
    return buf.getvalue()


def test_an_entrypoint_script_missing_from_the_context_is_refused_naming_the_folder(
    cluster: Cluster, tmp_path: Path
) -> None:
    text = yaml.safe_dump(CONFIG)
    answer = httpx.post(
        f"{cluster.url}/api/v1/experiments/validate",
        headers=cluster.auth_headers(),
        data={"config": text},
        files={"context": ("context.tar.gz", nested_context(), "application/gzip")},
    )
    assert answer.status_code == 400, answer.text
    (detail,) = answer.json()["error"]["details"]
    assert detail["path"] == "entrypoint"
    assert "'train.py', which is not in the context" in detail["message"]
    assert "under 'digits/': pack the folder's contents, not the folder" in detail["message"]

    with pytest.raises(InvalidConfig, match="under 'digits/'"):
        cluster.client.create_experiment(text, nested_context())
    assert cluster.client.list_experiments().experiments == []

    # The CLI packs the directory given: its parent is refused, naming the folder to give.
    parent = tmp_path / "examples"
    (parent / "digits").mkdir(parents=True)
    (parent / "digits" / "train.py").write_text("")
    config = parent / "config.yaml"
    config.write_text(text)
    result = cluster.cli("experiment", "create", str(config), str(parent))
    assert result.returncode != 0
    assert (
        "but 'digits/train.py' is: give the folder 'digits' as the context, not its parent"
        in result.stderr.replace("\n", " ")
    )


def test_a_script_in_the_context_a_module_and_a_shell_command_are_accepted(
    cluster: Cluster, tmp_path: Path
) -> None:
    (tmp_path / "train.py").write_text("")
    context = pack_context(tmp_path).data
    for entrypoint in (
        "python3 train.py --epochs 1",
        "python3 -m some.module",
        "sh -c 'cd sub && python3 train.py'",
    ):
        config = yaml.safe_dump({**CONFIG, "entrypoint": entrypoint})
        exp = cluster.client.create_experiment(config, context, activate=False)
        assert exp.config["entrypoint"] == entrypoint
