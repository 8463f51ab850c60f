"""Experiments whose checkpoint_storage is S3, on a real cluster and a real S3-compatible server
(moto's): trials checkpoint to the bucket, pause and resume from it, GC deletes from it, and a
storage config that cannot work is refused at submission with its reason. The master contacts
only the object stores its admin named, so its config lists the server's endpoint (and the
dead one) in storage_endpoints (tests/integration/test_storage_endpoints.py shows the rest)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from assay.errors import InvalidConfig
from tests.integration.cluster import Cluster, free_port, serve, wait_for
from tests.s3_server import S3Server, s3_server

pytestmark = pytest.mark.integration

BUCKET = "experiments"
DEAD_ENDPOINT = f"http://127.0.0.1:{free_port()}"
"""An endpoint the admin allows where nothing answers."""


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with s3_server() as server:
        server.create_bucket(BUCKET)
        yield server


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest, s3: S3Server
) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("s3")
    settings = root / "master.yaml"
    settings.write_text(yaml.safe_dump({"storage_endpoints": [s3.endpoint_url, DEAD_ENDPOINT]}))
    c = Cluster(root / "home", master_config=settings)
    c.start_master()
    c.start_agent("agent-1", slots=1)
    yield from serve(c, request)


def counter_config(storage: dict[str, Any], *, length: int) -> str:
    return yaml.safe_dump(
        {
            "name": "counter-on-s3",
            "entrypoint": "python3 train.py",
            "hyperparameters": {"step_seconds": 0.02, "checkpoint_every": 10},
            "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": length}},
            "checkpoint_storage": storage,
            "max_restarts": 0,
        }
    )


def _stored_uuids(s3: S3Server, prefix: str) -> tuple[set[str], set[str]]:
    """The uuids with a manifest, and the uuids any object lies under."""
    pages = s3.client().get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    keys = [o["Key"][len(prefix) :] for page in pages for o in page.get("Contents", [])]
    manifests = {
        k.split("/")[1].removesuffix(".json") for k in keys if k.startswith(".assay-manifests/")
    }
    dirs = {k.split("/")[0] for k in keys if not k.startswith(".assay-manifests/")}
    return manifests, dirs


def test_trial_checkpoints_to_s3_pauses_and_resumes_from_it_and_gc_deletes_there(
    cluster: Cluster, s3: S3Server
) -> None:
    prefix = "team-a/ckpts/"
    exp_id = cluster.submit(counter_config(s3.config(BUCKET, prefix=prefix), length=100))
    trial_id = wait_for("the trial to start", lambda: cluster.client.trials(exp_id))[0].id
    wait_for(
        "a checkpoint in the bucket",
        lambda: (t := cluster.client.trial(trial_id)).latest_checkpoint and t.steps_completed >= 20,
    )
    cluster.client.transition(exp_id, "pause")
    cluster.wait_state(exp_id, "PAUSED")
    paused = wait_for(
        "the trial to stop",
        lambda: (t := cluster.client.trial(trial_id)).state == "PAUSED" and t,
    )
    uuid = str(paused.latest_checkpoint)
    paused_at = cluster.client.checkpoint(uuid).steps_completed
    manifests, _ = _stored_uuids(s3, prefix)
    assert uuid in manifests, "the checkpoint the trial resumes from is in the bucket"
    state = s3.client().get_object(Bucket=BUCKET, Key=f"{prefix}{uuid}/state.json")
    assert state["Body"].read() == f'{{"steps": {paused_at}}}'.encode()

    cluster.client.transition(exp_id, "activate")
    cluster.wait_state(exp_id, "COMPLETED")
    logs = " ".join(cluster.trial_logs(trial_id))
    assert f"started at step {paused_at} run 2" in logs, logs
    assert cluster.client.trial(trial_id).steps_completed == 100

    # GC at the end keeps the trial's latest and best; the rest are gone from the bucket.
    def collected() -> tuple[set[str], set[str]] | None:
        live = {c.uuid for c in cluster.client.trial_checkpoints(trial_id) if c.state != "DELETED"}
        manifests, dirs = _stored_uuids(s3, prefix)
        return (live, manifests) if len(live) <= 2 and manifests == dirs == live else None

    live, _ = wait_for("GC to delete from the bucket", collected, timeout=30)
    assert live, "the latest checkpoint is kept"


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("missing bucket", "checkpoint_storage.bucket"),
        ("dead endpoint", "checkpoint_storage.endpoint_url"),
    ],
)
def test_storage_that_cannot_work_is_refused_at_submission_with_its_reason(
    cluster: Cluster, s3: S3Server, where: str, expected: str
) -> None:
    if where == "missing bucket":
        storage = s3.config("no-such-bucket")
        reason = f"s3 bucket 'no-such-bucket' at {s3.endpoint_url} does not exist"
    else:
        url = DEAD_ENDPOINT
        storage = {**s3.config(BUCKET), "endpoint_url": url}
        reason = f"s3 bucket '{BUCKET}' at {url} is not reachable: "
    before = cluster.client.list_experiments(limit=1000).experiments
    started = time.monotonic()
    with pytest.raises(InvalidConfig) as caught:
        cluster.submit(counter_config(storage, length=10))
    print(f"{where}: refused in {time.monotonic() - started:.2f}s")
    [detail] = caught.value.details
    assert detail.path == expected
    assert detail.message.startswith(reason)
    assert cluster.client.list_experiments(limit=1000).experiments == before, "nothing created"
