"""An experiment's checkpoint storage on a server its submitter chose, on a real cluster: the
master contacts it neither at submission nor later (no probe, no download, no collection), so
it never sends it a request, let alone one signed with the cloud credentials in the master's
environment; the trials use it and fail in one line when it cannot be used.

A stand-in HTTP server on loopback plays the chosen S3 endpoint and records every request; a
real S3-compatible server (moto's) holds the checkpoints of the experiment that runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.errors import AssayError
from tests.http_stub import Recorded, refusing_store, serving
from tests.integration.cluster import Cluster, serve, wait_for
from tests.integration.test_s3_checkpoints import counter_config
from tests.s3_server import S3Server, s3_server

pytestmark = pytest.mark.integration

MASTER_KEY = "AKIATHEMASTERSOWNKEY"
"""The access key in the master's environment (its ambient credentials)."""
USER_KEY = "the-submitters-key"
REMOTE_WORDS = "words-the-chosen-server-wrote"
BUCKET = "experiments"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[tuple[str, Recorded]]:
    recorded = Recorded()
    with serving(refusing_store(recorded, REMOTE_WORDS)) as url:
        yield url, recorded


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with s3_server() as server:
        server.create_bucket(BUCKET)
        yield server


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Cluster]:
    """A master with cloud credentials in its environment and no storage_endpoints; its agent
    (so its trials) without them."""
    c = Cluster(tmp_path_factory.mktemp("endpoints") / "home")
    ambient = {"AWS_ACCESS_KEY_ID": MASTER_KEY, "AWS_SECRET_ACCESS_KEY": "the-masters-secret"}
    c.env.update(ambient)
    c.start_master()
    for name in ambient:
        del c.env[name]
    c.start_agent("agent-1", slots=1)
    yield from serve(c, request)


def _storage(url: str, *, keys: bool) -> dict[str, str]:
    storage = {"type": "s3", "bucket": BUCKET, "endpoint_url": url}
    if keys:
        storage |= {"access_key": USER_KEY, "secret_key": "the-submitters-secret"}
    return storage


def test_the_master_sends_nothing_to_an_endpoint_the_submitter_chose(
    cluster: Cluster, endpoint: tuple[str, Recorded]
) -> None:
    url, recorder = endpoint
    try:
        exp_id = cluster.submit(
            counter_config(_storage(url, keys=False), length=10), activate=False
        )
    finally:
        signed = [h for _, _, h in recorder.seen() if MASTER_KEY in h.get("Authorization", "")]
        assert signed == [], "the master signed requests with its own credentials"
    assert recorder.seen() == [], "no probe at submission"
    notes = " ".join(n.text for n in cluster.client.notes(exp_id))
    assert "checkpoint_storage.endpoint_url: not checked at submission" in notes
    assert "storage_endpoints" in notes
    cluster.client.transition(exp_id, "kill")


def test_a_trial_fails_in_one_line_at_a_storage_it_cannot_use_and_the_master_signs_nothing(
    cluster: Cluster, endpoint: tuple[str, Recorded]
) -> None:
    url, recorder = endpoint
    before = len(recorder.seen())
    exp_id = cluster.submit(counter_config(_storage(url, keys=True), length=40), activate=False)
    assert len(recorder.seen()) == before, "no probe at submission"
    cluster.client.transition(exp_id, "activate")
    exp = cluster.wait_state(exp_id, "ERROR")
    [trial] = cluster.client.trials(exp_id)
    assert trial.state == "ERROR"
    assert "\n" not in trial.message
    assert f"s3 bucket '{BUCKET}' at {url} refused the credentials or access" in trial.message
    assert f"trial {trial.id}" in exp.message and "refused the credentials" in exp.message
    seen = recorder.seen()[before:]
    assert seen, "the trial used the storage"
    assert all(f"Credential={USER_KEY}/" in h.get("Authorization", "") for _, _, h in seen), seen
    assert all(MASTER_KEY not in h.get("Authorization", "") for _, _, h in recorder.seen())


def test_the_master_neither_reads_nor_collects_checkpoints_on_a_server_it_was_not_given(
    cluster: Cluster, s3: S3Server, tmp_path: Path
) -> None:
    prefix = "chosen/"
    storage = s3.config(BUCKET, prefix=prefix)
    exp_id = cluster.submit(counter_config(storage, length=60))
    cluster.wait_state(exp_id, "COMPLETED")
    [trial] = cluster.client.trials(exp_id)
    stored = cluster.client.trial_checkpoints(trial.id)
    assert len(stored) == 6, "the trial checkpointed to the store it chose"

    with pytest.raises(AssayError) as caught:
        cluster.client.download_checkpoint(stored[0].uuid, tmp_path / "out")
    assert caught.value.status == 409
    message = caught.value.message
    assert "the master does not contact s3 bucket" in message
    assert "storage_endpoints" in message
    assert not (tmp_path / "out").exists()

    # The collection at the experiment's end deletes nothing there: every checkpoint is kept,
    # in the bucket and as a row, and the master's log says why.
    wait_for(
        "the collection to give up",
        lambda: "could not delete checkpoint" in cluster.log("master"),
        timeout=30,
    )
    assert all(c.state == "ACTIVE" for c in cluster.client.trial_checkpoints(trial.id))
    keys = s3.client().list_objects_v2(Bucket=BUCKET, Prefix=f"{prefix}.assay-manifests/")
    assert len(keys.get("Contents", [])) == 6
