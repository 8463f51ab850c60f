"""``POST /api/v1/experiments/validate`` and ``POST /api/v1/jobs/validate`` in process on a real
master (SQLite): the checks of a submission, each problem at its path, and nothing created; an
NNI config submitted as written is read against the uploaded directory."""

from __future__ import annotations

import asyncio
import io
import json
import tarfile
from pathlib import Path
from typing import Any

import httpx
import yaml

from assay.api import create_app
from assay.config import MasterConfig
from assay.context import pack_context
from assay.db import Database, contexts, sqlite_url
from assay.master import Master
from tests.unit.api.test_models_api import BASE, _tokens

NATIVE = {
    "name": "checked",
    "entrypoint": "python3 train.py",
    "hyperparameters": {"lr": {"type": "double", "minval": 0.1, "maxval": 1.0}},
    "searcher": {"name": "random", "metric": "loss", "max_trials": 2, "max_length": 10},
}

BAD_NATIVE = {
    **NATIVE,
    "hyperparameters": {"lr": {"type": "double", "minval": 1.0, "maxval": 0.1}},
    "searcher": {**NATIVE["searcher"], "max_trials": 0},
    "resources": {"resource_pool": "nowhere"},
}

NNI = {
    "experimentName": "nni-checked",
    "searchSpaceFile": "search_space.json",
    "trialCommand": "python3 trial.py",
    "trialCodeDirectory": "code",
    "maxTrialNumber": 2,
    "tuner": {"name": "Random"},
    "trainingService": {"platform": "local"},
}

PAI_V2 = """\
protocolVersion: 2
name: checked-job
type: job
prerequisites:
  - {name: image, type: dockerimage, uri: python:3.11}
taskRoles:
  main:
    instances: 2
    dockerImage: image
    resourcePerInstance: {cpu: 1, memoryMB: 256, gpu: 0}
    commands: [echo hi]
"""

PAI_V1 = {
    "jobName": "checked-v1",
    "image": "python:3.11",
    "taskRoles": [
        {
            "name": "main",
            "taskNumber": 1,
            "cpuNumber": 1,
            "memoryMB": 256,
            "gpuNumber": 0,
            "command": "echo hi",
        }
    ],
}


def _nni_project(root: Path) -> Path:
    """An NNI project as it sits on disk: the config's directory with the search space file and
    the trial code in code/."""
    (root / "code").mkdir(parents=True)
    (root / "code" / "trial.py").write_text("print('trial')\n")
    (root / "search_space.json").write_text(
        json.dumps({"lr": {"_type": "uniform", "_value": [0.1, 1.0]}})
    )
    (root / "config.yml").write_text(yaml.safe_dump(NNI))
    return root


def _tar_gz(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _details(answer: httpx.Response) -> dict[str, str]:
    assert answer.status_code == 400, answer.text
    return {d["path"]: d["message"] for d in answer.json()["error"]["details"]}


def test_validating_checks_as_a_submission_would_and_creates_nothing(tmp_path: Path) -> None:
    db = Database(sqlite_url(tmp_path / "assay.db"))
    master = Master(MasterConfig(), db, tmp_path / "home")
    token = _tokens(master)["alice"]
    (tmp_path / "ctx").mkdir()
    (tmp_path / "ctx" / "train.py").write_text("print('hi')\n")
    context = pack_context(tmp_path / "ctx").data
    project = _nni_project(tmp_path / "nni")
    nni_context = pack_context(project).data
    app = create_app(master)

    async def calls() -> None:
        transport = httpx.ASGITransport(app=app)
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(transport=transport, base_url=BASE, headers=headers) as http:

            async def post(path: str, config: str, ctx: bytes | None, **form: Any) -> Any:
                files = {"context": ("context.tar.gz", ctx, "application/gzip")} if ctx else None
                # A multipart body even without a file, as a browser's FormData sends it.
                data = {"config": config, **form}
                return await http.post(
                    f"/api/v1{path}",
                    data=data,
                    files=files or {"_": ("", b"", "application/octet-stream")},
                )

            # A valid config, before its directory is picked, and with it.
            plain = await post("/experiments/validate", yaml.safe_dump(NATIVE), None)
            assert plain.status_code == 200, plain.text
            assert plain.json()["source"] == "assay" and plain.json()["context_files"] is None
            assert plain.json()["name"] == "checked" and plain.json()["searcher"] == "random"
            full = await post("/experiments/validate", yaml.safe_dump(NATIVE), context)
            assert full.json()["context_files"] == 1

            # Every problem at once, each at the path of the field it names.
            problems = _details(
                await post("/experiments/validate", yaml.safe_dump(BAD_NATIVE), None)
            )
            assert "searcher.max_trials" in problems
            assert (
                "resources.resource_pool" in problems
                and "nowhere" in problems["resources.resource_pool"]
            )
            assert any(p.startswith("hyperparameters.lr") for p in problems), problems
            broken = _details(await post("/experiments/validate", "name: [unclosed", None))
            assert broken, "a YAML error is reported as a problem with a path"
            overridden = _details(
                await post(
                    "/experiments/validate",
                    yaml.safe_dump(NATIVE),
                    None,
                    overrides=["searcher.max_trials=-1"],
                )
            )
            assert "searcher.max_trials" in overridden
            # A context that is not a tar.gz is refused as a submission's is.
            junk = await post("/experiments/validate", yaml.safe_dump(NATIVE), b"not a tarball")
            assert junk.status_code == 400, junk.text

            # An NNI config as written: its search space file is read from the upload.
            nni = await post("/experiments/validate", yaml.safe_dump(NNI), nni_context)
            assert nni.status_code == 200, nni.text
            assert nni.json()["source"] == "nni-v2" and nni.json()["name"] == "nni-checked"
            assert nni.json()["notes"][0] == "read as an NNI v2 config"
            # Without the upload, the file it names is missing: said at its key.
            assert "searchSpaceFile" in _details(
                await post("/experiments/validate", yaml.safe_dump(NNI), None)
            )
            # A path out of the upload is refused before anything is read.
            escaping = {**NNI, "searchSpaceFile": "../../../../etc/passwd"}
            out = _details(
                await post("/experiments/validate", yaml.safe_dump(escaping), nni_context)
            )
            assert "leads out of the uploaded directory" in out["searchSpaceFile"]
            linked = _tar_gz({"search_space.json": b"{}", "code/trial.py": b""})
            away = {**NNI, "trialCodeDirectory": "/tmp"}
            assert "trialCodeDirectory" in _details(
                await post("/experiments/validate", yaml.safe_dump(away), linked)
            )

            # Jobs: OpenPAI v2 YAML and v1 JSON, and a bad one with its paths.
            v2 = await post("/jobs/validate", PAI_V2, None)
            assert v2.status_code == 200, v2.text
            assert v2.json()["source_format"] == "openpai-v2" and v2.json()["instances"] == 2
            v1 = await post("/jobs/validate", json.dumps(PAI_V1), context)
            assert v1.json()["source_format"] == "openpai-v1" and v1.json()["context_files"] == 1
            bad_job = _details(
                await post("/jobs/validate", PAI_V2.replace("instances: 2", "instances: 0"), None)
            )
            assert "taskRoles.main.instances" in bad_job
            elsewhere = _details(
                await post("/jobs/validate", PAI_V2 + "defaults: {virtualCluster: nowhere}\n", None)
            )
            assert "does not exist" in elsewhere["defaults.virtualCluster"], elsewhere

            # Nothing was created by any of it.
            listed = (await http.get("/api/v1/experiments")).json()
            assert listed["pagination"]["total"] == 0
            assert (await http.get("/api/v1/tasks")).json()["tasks"] == []

            # The NNI config submitted as written makes an experiment whose context is the
            # trial code directory.
            made = await post("/experiments", yaml.safe_dump(NNI), nni_context)
            assert made.status_code == 201, made.text
            config = made.json()["config"]
            assert config["entrypoint"] == "python3 trial.py"
            assert config["searcher"]["max_trials"] == 2
            notes = (await http.get(f"/api/v1/experiments/{made.json()['id']}/notes")).json()
            assert notes["notes"][0]["text"] == "read as an NNI v2 config"

    asyncio.run(calls())
    with db.session() as s:
        data = contexts.require(s, 1).data
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        names = tar.getnames()
    assert "trial.py" in names and "search_space.json" not in names
