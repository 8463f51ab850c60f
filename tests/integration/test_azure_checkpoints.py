"""Experiments whose checkpoint_storage is Azure Blob Storage, on a real cluster and Azurite:
a trial checkpoints to the container and resumes from it after a pause, its checkpoint comes
back through the master's download, and a storage config that cannot work is refused at
submission with its reason. The master contacts only the object stores its admin named, so its
config lists Azurite's endpoint in storage_endpoints."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.errors import InvalidConfig
from tests.azure_server import ACCOUNT_KEY, AzureServer, azure_server
from tests.integration.cluster import Cluster, serve, wait_for
from tests.integration.test_s3_checkpoints import counter_config

pytestmark = pytest.mark.integration

CONTAINER = "experiments"


@pytest.fixture(scope="module")
def azurite() -> Iterator[AzureServer]:
    with azure_server() as server:
        server.create_container(CONTAINER)
        yield server


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest, azurite: AzureServer
) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("azure")
    settings = root / "master.yaml"
    settings.write_text(f"storage_endpoints: ['{azurite.account_url}']\n")
    c = Cluster(root / "home", master_config=settings)
    c.start_master()
    c.start_agent("agent-1", slots=1)
    yield from serve(c, request)


def test_trial_checkpoints_to_azure_resumes_from_it_and_downloads_through_the_master(
    cluster: Cluster, azurite: AzureServer, tmp_path: Path
) -> None:
    exp_id = cluster.submit(counter_config(azurite.config(CONTAINER), length=60))
    trial_id = wait_for("the trial to start", lambda: cluster.client.trials(exp_id))[0].id
    wait_for(
        "a checkpoint in the container",
        lambda: (t := cluster.client.trial(trial_id)).latest_checkpoint and t.steps_completed >= 20,
    )
    cluster.client.transition(exp_id, "pause")
    paused = wait_for(
        "the trial to stop",
        lambda: (t := cluster.client.trial(trial_id)).state == "PAUSED" and t,
    )
    uuid = str(paused.latest_checkpoint)
    paused_at = cluster.client.checkpoint(uuid).steps_completed
    blobs = azurite.service().get_container_client(CONTAINER)
    names = {b.name for b in blobs.list_blobs()}
    assert f".assay-manifests/{uuid}.json" in names
    stored = blobs.download_blob(f"{uuid}/state.json").readall()
    assert stored == f'{{"steps": {paused_at}}}'.encode()

    out = cluster.client.download_checkpoint(uuid, tmp_path / "out")
    assert (out / "state.json").read_bytes() == stored

    cluster.client.transition(exp_id, "activate")
    cluster.wait_state(exp_id, "COMPLETED")
    logs = " ".join(cluster.trial_logs(trial_id))
    assert f"started at step {paused_at} run 2" in logs, logs
    assert cluster.client.trial(trial_id).steps_completed == 60


@pytest.mark.parametrize(
    ("where", "expected", "reason"),
    [
        ("missing container", "checkpoint_storage.container", "does not exist"),
        ("wrong key", "checkpoint_storage.credential", "refused the credentials"),
    ],
)
def test_azure_storage_that_cannot_work_is_refused_at_submission_with_its_reason(
    cluster: Cluster, azurite: AzureServer, where: str, expected: str, reason: str
) -> None:
    if where == "missing container":
        storage = azurite.config("no-such-container")
    else:
        wrong = azurite.connection_string.replace(ACCOUNT_KEY, "d3Jvbmcta2V5" * 4)
        storage = {**azurite.config(CONTAINER), "connection_string": wrong}
    before = cluster.client.list_experiments(limit=1000).experiments
    with pytest.raises(InvalidConfig) as caught:
        cluster.submit(counter_config(storage, length=10))
    [detail] = caught.value.details
    assert detail.path == expected
    assert reason in detail.message
    assert "\n" not in detail.message, "one line, without the service's request id and XML"
    assert detail.message.endswith(("(HTTP 404)", ": HTTP 403")), "none of the service's words"
    assert cluster.client.list_experiments(limit=1000).experiments == before, "nothing created"
