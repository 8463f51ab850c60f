"""Determined's checkpoints and model registry under ``/det``, in process on a real master
(SQLite): a checkpoint reads as ``v1Checkpoint`` with its training, lists sort and page as
Determined's master does, downloads come as the archive ``Accept`` asks, deletion keeps what a
live trial needs, and the registry answers ``det model``'s requests, refusing what assay's
models lack. Every answer is read by Determined's own generated client where it is installed.

The real ``det`` and SDK drive the same routes in
``tests/integration/test_det_checkpoints.py``."""

from __future__ import annotations

import asyncio
import gzip
import io
import json
import subprocess
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from assay.api import create_app
from assay.config import MasterConfig
from assay.context import pack_context
from assay.db import Database, sqlite_url
from assay.master import Master
from assay.master.artifacts._trained import _shown_config
from tests.unit.api.test_models_api import _tokens
from tests.unit.master.test_gc_on_demand import _experiment

BASE = "http://127.0.0.1:8080"
DET_PYTHON = Path(__file__).resolve().parents[3] / ".venv-det" / "bin" / "python"


class Det:
    """Requests under ``/det`` signed in as one of the test's users, and the answers kept to
    be read by Determined's generated client (:func:`read_by_the_real_client`)."""

    def __init__(self, master: Master, tokens: dict[str, str]) -> None:
        self.app = create_app(master)
        self.tokens = tokens
        self.seen: list[tuple[str, Any]] = []

    def __call__(self, who: str, method: str, path: str, **kw: Any) -> httpx.Response:
        async def go() -> httpx.Response:
            transport = httpx.ASGITransport(app=self.app)
            async with httpx.AsyncClient(transport=transport, base_url=BASE) as http:
                headers = {"Authorization": f"Bearer {self.tokens[who]}", **kw.pop("headers", {})}
                return await http.request(method, f"/det{path}", headers=headers, **kw)

        return asyncio.run(go())

    def ok(self, binding: str, who: str, method: str, path: str, **kw: Any) -> Any:
        """The JSON of a 200 answer, kept to be read as Determined's ``binding`` reads it."""
        answer = self(who, method, path, **kw)
        assert answer.status_code == 200, answer.text
        self.seen.append((binding, answer.json()))
        return answer.json()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Det, int, int, list[str]]]:
    """A master with an experiment whose one trial (not ended) has checkpoints at steps 10, 20
    and 30 (validation loss 0.5, 0.1, 0.9; the searcher's metric, smaller is better)."""
    tmp = tmp_path_factory.mktemp("detckpt")
    db = Database(sqlite_url(tmp / "assay.db"))
    allowed = {"host_paths": [tmp]}
    master = Master(MasterConfig(allowed_checkpoint_storage=allowed), db, tmp / "home")
    (tmp / "ctx").mkdir()
    (tmp / "ctx" / "train.py").write_text("print('hi')\n")
    exp_id, trial_id, uuids = _experiment(master, pack_context(tmp / "ctx").data, tmp / "ck")
    det = Det(master, _tokens(master))
    yield det, exp_id, trial_id, uuids
    db.dispose()


def test_a_checkpoint_reads_with_its_training_and_step(
    world: tuple[Det, int, int, list[str]],
) -> None:
    det, exp_id, trial_id, uuids = world
    got = det.ok("v1GetCheckpointResponse", "bob", "GET", f"/api/v1/checkpoints/{uuids[0]}")
    ckpt = got["checkpoint"]
    assert ckpt["uuid"] == uuids[0] and ckpt["state"] == "STATE_COMPLETED"
    assert ckpt["resources"] == {"weights": str(len(uuids[0]))}, "sizes as int64 strings"
    assert ckpt["metadata"] == {"steps_completed": 10}, "the CLI reads the step there"
    assert ckpt["taskId"] == f"trial-{trial_id}" and ckpt["reportTime"].endswith("Z")
    training = ckpt["training"]
    assert (training["trialId"], training["experimentId"]) == (trial_id, exp_id)
    assert training["validationMetrics"]["avgMetrics"] == {"loss": 0.5}
    assert training["searcherMetric"] == 0.5
    storage = training["experimentConfig"]["checkpoint_storage"]
    assert storage["type"] == "shared_fs", "the SDK downloads directly from what it names"

    missing = det("bob", "GET", "/api/v1/checkpoints/nope")
    assert missing.status_code == 404 and missing.json()["error"]["reason"] == "NotFound"
    assert "nope" in missing.json()["message"]


def test_lists_sort_by_the_searchers_metric_filter_by_state_and_page(
    world: tuple[Det, int, int, list[str]],
) -> None:
    det, exp_id, trial_id, uuids = world
    listed = "v1GetExperimentCheckpointsResponse"

    def steps(path: str, **params: Any) -> list[int]:
        answer = det.ok(listed, "bob", "GET", path, params=params)
        return [c["metadata"]["steps_completed"] for c in answer["checkpoints"]]

    experiment = f"/api/v1/experiments/{exp_id}/checkpoints"
    best = {"sortByAttr": "SORT_BY_SEARCHER_METRIC"}
    assert steps(experiment, **best) == [20, 10, 30], "smaller loss first, as configured"
    assert steps(experiment, **best, orderBy="ORDER_BY_DESC") == [30, 10, 20]
    assert steps(experiment, sortByMetric="loss", orderBy="ORDER_BY_DESC") == [30, 10, 20]
    assert steps(experiment, sortByMetric="acc", orderBy="ORDER_BY_ASC") == [10, 20, 30]
    assert steps(experiment, sortByAttr="SORT_BY_BATCH_NUMBER", orderBy="ORDER_BY_DESC") == [
        30,
        20,
        10,
    ]
    top = det.ok(listed, "bob", "GET", experiment, params={**best, "limit": 1})
    assert [c["uuid"] for c in top["checkpoints"]] == [uuids[1]]
    assert top["pagination"] == {
        "offset": 0,
        "limit": 1,
        "startIndex": 0,
        "endIndex": 1,
        "total": 3,
    }
    assert steps(experiment, states=["STATE_COMPLETED", "STATE_ERROR"]) == [10, 20, 30]
    assert steps(experiment, states="STATE_DELETED") == []
    trial = f"/api/v1/trials/{trial_id}/checkpoints"
    assert steps(trial, **best, offset=1) == [10, 30]

    for path, params, status in (
        (experiment, {"sortByAttr": "SORT_BY_SIZE"}, 400),
        (experiment, {"offset": 9}, 400),
        ("/api/v1/experiments/999/checkpoints", {}, 404),
        ("/api/v1/trials/999/checkpoints", {}, 404),
    ):
        refused = det("bob", "GET", path, params=params)
        assert refused.status_code == status, refused.text
        assert refused.json()["message"] and "\n" not in refused.json()["message"]


def test_a_download_is_the_archive_accept_asks_for(
    world: tuple[Det, int, int, list[str]],
) -> None:
    det, _, _, uuids = world
    url = f"/checkpoints/{uuids[0]}"

    def files(accept: str) -> httpx.Response:
        answer = det("bob", "GET", url, headers={"Accept": accept})
        assert answer.status_code == 200, answer.text
        assert answer.headers["content-type"].startswith(accept.split(",", maxsplit=1)[0])
        return answer

    with tarfile.open(fileobj=io.BytesIO(files("application/gzip").content)) as tar:
        weights = tar.extractfile("weights")
        assert weights is not None and weights.read() == uuids[0].encode()
    assert gzip.decompress(files("application/gzip").content)[:7] == b"weights"
    with tarfile.open(fileobj=io.BytesIO(files("application/x-tar").content), mode="r:") as tar:
        assert tar.getnames() == ["weights"]
    with zipfile.ZipFile(io.BytesIO(files("application/zip, */*").content)) as archive:
        assert archive.read("weights") == uuids[0].encode()

    html = det("bob", "GET", url, headers={"Accept": "text/html"})
    assert html.status_code == 400 and "application/gzip" in html.json()["message"]
    assert det("bob", "GET", "/checkpoints/nope").status_code == 404


def test_deleting_keeps_a_live_trials_resume_point_and_marks_the_rest_deleted(
    world: tuple[Det, int, int, list[str]],
) -> None:
    det, exp_id, _, uuids = world
    resume = det("admin", "DELETE", "/api/v1/checkpoints", json={"checkpointUuids": [uuids[2]]})
    assert resume.status_code == 409 and "still needed" in resume.json()["message"]
    theirs = det("bob", "DELETE", "/api/v1/checkpoints", json={"checkpointUuids": [uuids[0]]})
    assert theirs.status_code == 403
    bad = det("admin", "DELETE", "/api/v1/checkpoints", json={"uuids": [uuids[0]]})
    assert bad.status_code == 400 and "checkpointUuids" in bad.json()["message"]

    done = det("admin", "DELETE", "/api/v1/checkpoints", json={"checkpointUuids": [uuids[0]]})
    assert done.status_code == 200 and done.json() == {}
    gone = det.ok("v1GetCheckpointResponse", "bob", "GET", f"/api/v1/checkpoints/{uuids[0]}")
    assert gone["checkpoint"]["state"] == "STATE_DELETED"
    listed = det(
        "bob",
        "GET",
        f"/api/v1/experiments/{exp_id}/checkpoints",
        params={"states": "STATE_COMPLETED"},
    )
    assert [c["uuid"] for c in listed.json()["checkpoints"]] == uuids[1:]
    download = det("bob", "GET", f"/checkpoints/{uuids[0]}")
    assert download.status_code == 409 and "DELETED" in download.json()["message"]


def test_the_registry_answers_det_model_and_refuses_what_assays_models_lack(
    world: tuple[Det, int, int, list[str]],
) -> None:
    det, _, _, uuids = world
    # As the SDK's create_model sends it: every field, the unset ones null.
    sdk = {"name": "mnist", "description": None, "labels": None, "metadata": None}
    made = det.ok("v1PostModelResponse", "alice", "POST", "/api/v1/models", json=sdk)["model"]
    assert (made["name"], made["username"], made["numVersions"]) == ("mnist", "alice", 0)
    assert made["workspaceId"] == 1 and made["metadata"] == {} and made["userId"] > 0
    det.ok("v1PostModelResponse", "bob", "POST", "/api/v1/models", json={"name": "resnet"})
    by_id = det.ok("v1GetModelResponse", "bob", "GET", f"/api/v1/models/{made['id']}")
    assert by_id["model"]["name"] == "mnist", "a model is named by its id too"

    listed = det.ok(
        "v1GetModelsResponse",
        "bob",
        "GET",
        "/api/v1/models",
        params={"sortBy": "SORT_BY_NAME", "orderBy": "ORDER_BY_DESC"},
    )
    assert [m["name"] for m in listed["models"]] == ["resnet", "mnist"]
    only = det("bob", "GET", "/api/v1/models", params={"workspaceNames": "Other"}).json()
    assert only["models"] == []

    version = det.ok(
        "v1PostModelVersionResponse",
        "alice",
        "POST",
        "/api/v1/models/mnist/versions",
        json={"checkpointUuid": uuids[1], "modelName": "mnist"},
    )["modelVersion"]
    assert version["version"] == 1 and version["checkpoint"]["uuid"] == uuids[1]
    assert version["checkpoint"]["training"]["searcherMetric"] == 0.1
    assert version["model"]["numVersions"] == 1
    latest = det.ok(
        "v1GetModelVersionsResponse",
        "bob",
        "GET",
        "/api/v1/models/mnist/versions",
        params={"limit": 1, "sortBy": "SORT_BY_VERSION", "orderBy": "ORDER_BY_DESC"},
    )
    assert [v["version"] for v in latest["modelVersions"]] == [1]
    det.ok("v1GetModelVersionResponse", "bob", "GET", "/api/v1/models/mnist/versions/1")
    patched = det.ok(
        "v1PatchModelResponse",
        "alice",
        "PATCH",
        "/api/v1/models/mnist",
        json={"description": "digits"},
    )
    assert patched["model"]["description"] == "digits"

    for who, method, path, body, status, says in (
        ("alice", "POST", "/api/v1/models", {"name": "m2", "metadata": {"a": 1}}, 400, "metadata"),
        ("alice", "POST", "/api/v1/models", {"name": "m2", "workspaceName": "w"}, 400, "workspace"),
        ("alice", "POST", "/api/v1/models", {"name": "mnist"}, 409, "already exists"),
        ("bob", "PATCH", "/api/v1/models/mnist", {"description": "x"}, 403, "alice"),
        ("alice", "PATCH", "/api/v1/models/mnist", {"name": "other"}, 400, "rename"),
        ("alice", "POST", "/api/v1/models/mnist/versions", {"checkpointUuid": "x"}, 404, "x"),
        (
            "alice",
            "POST",
            "/api/v1/models/mnist/versions",
            {"checkpointUuid": uuids[0]},
            400,
            "deleted",
        ),
        ("bob", "GET", "/api/v1/models/vgg", None, 404, "vgg"),
        ("bob", "GET", "/api/v1/models/mnist/versions/7", None, 404, "its versions: 1"),
        ("bob", "POST", "/api/v1/models/mnist/archive", None, 404, "assay model"),
    ):
        refused = det(who, method, path, json=body)
        assert refused.status_code == status, (path, refused.text)
        message = refused.json()["message"]
        assert says in message and "\n" not in message, message

    gone = det("alice", "DELETE", "/api/v1/models/mnist/versions/1")
    assert gone.status_code == 200 and gone.json() == {}
    assert det("alice", "DELETE", "/api/v1/models/mnist").json() == {}
    assert det("bob", "GET", "/api/v1/models/mnist").status_code == 404


@pytest.mark.skipif(not DET_PYTHON.exists(), reason="no .venv-det: `make det-client`")
def test_every_answer_reads_with_determineds_generated_client(
    world: tuple[Det, int, int, list[str]],
) -> None:
    """Run last: every 200 answer the tests above kept, read by ``bindings.<shape>.from_json``
    (it raises on a field it requires that is missing or of another type)."""
    det = world[0]
    assert len(det.seen) > 10
    code = (
        "import json, sys\n"
        "from determined.common.api import bindings\n"
        "for name, body in json.load(sys.stdin):\n"
        "    getattr(bindings, name).from_json(body)\n"
        "print('read', end='')\n"
    )
    read = subprocess.run(
        [DET_PYTHON, "-c", code],
        input=json.dumps(det.seen),
        capture_output=True,
        text=True,
        check=False,
    )
    assert read.returncode == 0 and read.stdout == "read", read.stderr


def test_a_checkpoints_config_leaves_its_storages_keys_out() -> None:
    """Determined's SDK downloads from the storage the config names with the keys it finds
    there: a masked key would be tried (and fail); none makes it use the client's own."""
    storage = {"type": "s3", "bucket": "b", "access_key": "AKIAEXAMPLE", "secret_key": "s3cr3t-v"}
    shown = _shown_config({"checkpoint_storage": storage, "description": "key s3cr3t-v"})
    assert shown["checkpoint_storage"] == {"type": "s3", "bucket": "b"}
    assert "s3cr3t-v" not in json.dumps(shown) and "AKIAEXAMPLE" not in json.dumps(shown)
