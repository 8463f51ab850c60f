"""TensorBoard on a real cluster: a trial writes scalars into ``get_tensorboard_path()``, the
harness uploads them to checkpoint storage, ``assay tensorboard start`` runs TensorBoard as a
zero-slot task, and the master's ``/proxy/<id>/`` serves it with the user's sign-in."""

from __future__ import annotations

import http.client
import json
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.integration.cluster import Cluster, serve, wait_for
from tests.s3_server import SECRET_KEY, S3Server, s3_server

pytestmark = pytest.mark.integration

TRAIN = """\
import time

import assay
from tensorboard.compat.proto.event_pb2 import Event
from tensorboard.compat.proto.summary_pb2 import Summary
from tensorboard.summary.writer.event_file_writer import EventFileWriter

with assay.core.init() as core:
    writer = EventFileWriter(str(core.train.get_tensorboard_path()))
    for op in core.searcher.operations():
        for step in range(1, op.length + 1):
            scalar = Summary(value=[Summary.Value(tag="assay_loss", simple_value=1.0 / step)])
            writer.add_event(Event(wall_time=time.time(), step=step, summary=scalar))
        writer.flush()
        core.train.report_validation_metrics(op.length, {"loss": 1.0 / op.length})
        op.report_completed(1.0 / op.length)
    writer.close()
"""


@pytest.fixture(scope="module")
def board_cluster(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Cluster]:
    # The experiments here keep their checkpoints in the tests' own directories.
    base = tmp_path_factory.getbasetemp()
    c = Cluster(tmp_path_factory.mktemp("tensorboard") / "home", allowed_storage=[base])
    c.start_master()
    c.start_agent("agent-1", slots=1)
    yield from serve(c, request)


@pytest.fixture(scope="module")
def trained(
    board_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> tuple[int, int, Path]:
    """A completed experiment whose one trial wrote 5 scalars: (experiment id, trial id, its
    checkpoint storage)."""
    root = tmp_path_factory.mktemp("tb-exp")
    storage = {"type": "shared_fs", "host_path": str(root / "storage")}
    exp_id, trial_id = _train(board_cluster, root, storage)
    return exp_id, trial_id, root / "storage"


def _train(c: Cluster, root: Path, storage: dict[str, Any]) -> tuple[int, int]:
    (root / "code").mkdir()
    (root / "code" / "train.py").write_text(TRAIN)
    config = {
        "name": "scalars",
        "entrypoint": "python3 train.py",
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 5}},
        "checkpoint_storage": storage,
        "max_restarts": 0,
    }
    exp_id = c.submit(yaml.safe_dump(config), root / "code")
    assert c.wait_state(exp_id, "COMPLETED", "ERROR").state == "COMPLETED"
    (trial,) = c.client.trials(exp_id)
    return exp_id, trial.id


def _wait_for_scalars(c: Cluster, url: str, trial_id: int) -> dict[str, Any]:
    headers = c.auth_headers()
    with httpx.Client(timeout=30) as http:

        def tags() -> dict[str, Any] | None:
            answer = http.get(url + "data/plugin/scalars/tags", headers=headers)
            found = answer.json() if answer.status_code == 200 else {}
            runs = [r for r in found if r.startswith(f"trial_{trial_id}")]
            return found if runs and "assay_loss" in found[runs[0]] else None

        found: dict[str, Any] = wait_for(
            "TensorBoard to load the trial's scalars", tags, timeout=60, interval=0.5
        )
    return found


def _raw_get(url: str, path: str, headers: dict[str, str]) -> http.client.HTTPResponse:
    """A GET that sends no Accept-Encoding at all (httpx and urllib always send one)."""
    parsed = httpx.URL(url)
    conn = http.client.HTTPConnection(parsed.host, parsed.port, timeout=30)
    conn.putrequest("GET", path, skip_accept_encoding=True)
    for name, value in headers.items():
        conn.putheader(name, value)
    conn.endheaders()
    return conn.getresponse()


def _cli_json(c: Cluster, *args: str) -> Any:
    return json.loads(c.cli(*args, "--json", check=True).stdout)


def test_trial_tensorboard_files_are_in_checkpoint_storage_after_it_ends(
    trained: tuple[int, int, Path],
) -> None:
    exp_id, trial_id, storage = trained
    stored = storage / "tensorboard" / str(exp_id) / str(trial_id)
    files = list(stored.iterdir())
    assert len(files) == 1 and files[0].name.startswith("events.out.tfevents.")
    assert files[0].stat().st_size > 100  # five scalar events and the file's header


def test_tensorboard_started_on_a_trial_shows_its_scalars_through_the_master(
    board_cluster: Cluster, trained: tuple[int, int, Path]
) -> None:
    c = board_cluster
    exp_id, trial_id, _ = trained
    board = _cli_json(c, "tensorboard", "start", str(exp_id), "-t", str(trial_id))
    assert board["url"] == f"{c.url}/proxy/{board['id']}/"
    assert board["trial_ids"] == [trial_id] and board["ready"] is True
    headers = c.auth_headers()
    with httpx.Client(timeout=30) as http:

        def tags() -> dict[str, Any] | None:
            answer = http.get(board["url"] + "data/plugin/scalars/tags", headers=headers)
            found = answer.json() if answer.status_code == 200 else {}
            runs = [r for r in found if r.startswith(f"trial_{trial_id}")]
            return found if runs and "assay_loss" in found[runs[0]] else None

        found = wait_for("TensorBoard to load the trial's scalars", tags, timeout=60, interval=0.5)
        assert list(found) == [f"trial_{trial_id}"], "the run is named by its trial alone"

        # What the task sends is passed on as it was asked for: no encoding to a client that
        # asked for none, and the master's own server and date headers, once each.
        plain = _raw_get(c.url, f"/proxy/{board['id']}/", headers)
        assert plain.status == 200
        assert plain.getheader("content-encoding") in (None, "identity")
        names = [name.lower() for name, _ in plain.getheaders()]
        assert names.count("server") == 1 and names.count("date") == 1, names
        assert b"<html" in plain.read().lower()

        # Without a sign-in the proxy refuses; a browser signs in once with ?token=.
        refused = http.get(board["url"])
        assert refused.status_code == 401 and "?token=" in refused.json()["error"]["message"]
        token = headers["Authorization"].split()[1]
        signed = http.get(board["url"] + f"?token={token}&x=1", follow_redirects=False)
        assert signed.status_code == 303
        assert signed.headers["location"] == f"/proxy/{board['id']}/?x=1"
        cookie = signed.headers["set-cookie"]
        assert f"Path=/proxy/{board['id']}/" in cookie and "HttpOnly" in cookie
        with httpx.Client(timeout=30, cookies={"assay_proxy": token}) as browser:
            page = browser.get(board["url"])
        assert page.status_code == 200 and "<html" in page.text.lower()
        # TensorBoard frames its own pages; no other site may frame it.
        assert page.headers["x-frame-options"] == "SAMEORIGIN"
        assert "frame-ancestors 'self'" in page.headers.get_list("content-security-policy")
        bad = http.get(board["url"] + "?token=not-a-token", follow_redirects=False)
        assert bad.status_code == 401

        csv = c.cli("tensorboard", "list", "--csv", check=True).stdout.splitlines()
        assert csv[0] == "ID,Experiment,Trials,State,User,Started,URL"
        assert csv[1].startswith(f"{board['id']},{exp_id},{trial_id},RUNNING,admin,")
        assert csv[1].endswith(board["url"]) and len(csv) == 2

        killed = c.cli("tensorboard", "kill", str(board["id"]), check=True)
        assert f"TensorBoard {board['id']}" in killed.stdout
        wait_for(
            "the TensorBoard to stop",
            lambda: c.client.tensorboard(board["id"]).state == "STOPPED",
        )
        gone = http.get(board["url"], headers=headers)
        assert gone.status_code == 503 and "has ended (STOPPED)" in gone.text
        assert c.client.tensorboards() == []
        assert [b.id for b in c.client.tensorboards(all_=True)] == [board["id"]]


def test_tensorboard_start_refuses_trials_of_another_experiment_naming_them(
    board_cluster: Cluster, trained: tuple[int, int, Path]
) -> None:
    exp_id, trial_id, _ = trained
    before = board_cluster.client.tensorboards(all_=True)
    bad = board_cluster.cli("tensorboard", "start", str(exp_id), "-t", str(trial_id + 100))
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert textwrap.shorten(bad.stderr, 1000) == textwrap.shorten(
        f"error: trial_ids: {trial_id + 100} is not a trial of experiment {exp_id}; "
        f"its trials are {trial_id}",
        1000,
    )
    missing = board_cluster.cli("tensorboard", "start", "9999")
    assert missing.returncode == 1 and "experiment 9999 not found" in missing.stderr
    assert board_cluster.client.tensorboards(all_=True) == before  # nothing half-created
    nothing = httpx.get(f"{board_cluster.url}/proxy/9999/", headers=board_cluster.auth_headers())
    assert nothing.status_code == 404


def test_tensorboard_started_before_any_trial_wrote_files_starts_with_a_note(
    board_cluster: Cluster, tmp_path: Path
) -> None:
    c = board_cluster
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "train.py").write_text(
        "import assay\n"
        "with assay.core.init() as core:\n"
        "    for op in core.searcher.operations():\n"
        "        core.train.report_validation_metrics(op.length, {'loss': 1.0})\n"
        "        op.report_completed(1.0)\n"
    )
    config = {
        "name": "no-scalars",
        "entrypoint": "python3 train.py",
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}},
        "checkpoint_storage": {"type": "shared_fs", "host_path": str(tmp_path / "storage")},
        "max_restarts": 0,
    }
    exp_id = c.submit(yaml.safe_dump(config), tmp_path / "code")
    assert c.wait_state(exp_id, "COMPLETED", "ERROR").state == "COMPLETED"
    (trial,) = c.client.trials(exp_id)
    started = c.cli("tensorboard", "start", str(exp_id), "--detach", check=True)
    assert started.stderr.splitlines()[-1] == (
        f"note: trial {trial.id} has not written TensorBoard files yet; TensorBoard shows them "
        "as they arrive (a trial writes them into core.train.get_tensorboard_path())"
    ), started.stderr
    board_id = started.stdout.split()[1]
    c.cli("tensorboard", "kill", board_id, check=True)


def test_the_proxy_path_without_its_slash_redirects_to_it(board_cluster: Cluster) -> None:
    answer = httpx.get(f"{board_cluster.url}/proxy/5?a=b", follow_redirects=False)
    assert answer.status_code == 307 and answer.headers["location"] == "/proxy/5/?a=b"


def test_deleting_the_experiment_deletes_its_tensorboard_files_too(
    board_cluster: Cluster, trained: tuple[int, int, Path]
) -> None:
    exp_id, _, storage = trained
    assert (storage / "tensorboard" / str(exp_id)).is_dir()
    board_cluster.cli("experiment", "delete", str(exp_id), "--yes", check=True)
    assert not (storage / "tensorboard" / str(exp_id)).exists()
    assert (storage / "tensorboard").is_dir()  # only this experiment's files went


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with s3_server() as server:
        server.create_bucket("boards")
        yield server


def test_tensorboard_over_s3_storage_copies_the_files_and_shows_the_scalars(
    board_cluster: Cluster, s3: S3Server, tmp_path: Path
) -> None:
    c = board_cluster
    exp_id, trial_id = _train(c, tmp_path, s3.config("boards", prefix="runs"))
    board = _cli_json(c, "tensorboard", "start", str(exp_id))
    _wait_for_scalars(c, board["url"], trial_id)
    # The storage's credentials reach the task as a secret: no answer shows them.
    task = httpx.get(f"{c.url}/api/v1/tasks/{board['id']}", headers=c.auth_headers())
    assert task.status_code == 200 and SECRET_KEY not in task.text
    c.cli("tensorboard", "kill", str(board["id"]), check=True)
