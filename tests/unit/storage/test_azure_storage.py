"""Azure storage passes the conformance kit against Azurite (a real Blob Storage server on
loopback), lays blobs out at the container's top level as Determined did, and its probe says
what is wrong with a config."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.errors import InvalidConfig, StorageError
from assay.storage import (
    FileStore,
    StorageManager,
    probe,
    probe_config_storage,
    storage_from_config,
)
from assay.storage._azure import AzureStorage
from assay.storage.testing import (
    SAMPLE_TREE,
    FileStoreConformance,
    StorageConformance,
    read_tree,
    write_tree,
)
from tests.azure_server import ACCOUNT_KEY, AzureServer, azure_server
from tests.integration.cluster import free_port


@pytest.fixture(scope="module")
def azurite() -> Iterator[AzureServer]:
    with azure_server() as server:
        yield server


def _fresh_container(server: AzureServer, root: Path) -> str:
    # Determined's azure layout has no prefix, so each test gets a container of its own.
    return server.create_container("t" + hashlib.sha256(str(root).encode()).hexdigest()[:20])


class TestAzureConformance(StorageConformance):
    @pytest.fixture(autouse=True)
    def _server(self, azurite: AzureServer) -> None:
        self.server = azurite

    def make_storage(self, root: Path) -> StorageManager:
        return storage_from_config(self.server.config(_fresh_container(self.server, root)))


class TestAzureFiles(FileStoreConformance):
    """TensorBoard's files go to the container too, beside the checkpoints."""

    @pytest.fixture(autouse=True)
    def _server(self, azurite: AzureServer) -> None:
        self.server = azurite

    def make_store(self, root: Path) -> FileStore:
        store = storage_from_config(self.server.config(_fresh_container(self.server, root)))
        assert isinstance(store, FileStore)
        return store

    def assert_holds(self, store: FileStore, key: str, data: bytes) -> None:
        assert isinstance(store, AzureStorage)
        blobs = self.server.service().get_container_client(store.client.container_name)
        assert blobs.download_blob(key).readall() == data


def _storage(server: AzureServer, container: str) -> AzureStorage:
    storage = storage_from_config(server.config(container))
    assert isinstance(storage, AzureStorage)
    return storage


def _blob_names(server: AzureServer, container: str) -> set[str]:
    return {b.name for b in server.service().get_container_client(container).list_blobs()}


def test_blobs_live_under_the_uuid_at_the_top_with_the_manifest_beside(
    azurite: AzureServer,
) -> None:
    container = azurite.create_container("layout")
    storage = _storage(azurite, container)
    with storage.store_path("abc") as path:
        write_tree(path, {"model.bin": b"m" * 10, "sub/x.txt": b"x"})
    assert _blob_names(azurite, container) == {
        "abc/model.bin",
        "abc/sub/x.txt",
        ".assay-manifests/abc.json",
    }


def test_account_url_with_an_account_key_reaches_the_container(
    azurite: AzureServer, tmp_path: Path
) -> None:
    container = azurite.create_container("by-account-url")
    storage = storage_from_config(
        {
            "type": "azure",
            "container": container,
            "account_url": azurite.account_url,
            "credential": ACCOUNT_KEY,
        }
    )
    write_tree(tmp_path / "src", {"w": b"weights"})
    storage.upload(tmp_path / "src", "k")
    assert storage.list_files("k") == {"w": 7}


def test_upload_and_download_report_progress_adding_up_to_the_size(
    azurite: AzureServer, tmp_path: Path
) -> None:
    storage = _storage(azurite, azurite.create_container("progress"))
    write_tree(tmp_path / "src", SAMPLE_TREE)
    up: list[int] = []
    storage.upload(tmp_path / "src", "p", progress=up.append)
    total = sum(len(c) for c in SAMPLE_TREE.values() if c)
    assert sum(up) == total
    down: list[int] = []
    storage.download("p", tmp_path / "out", progress=down.append)
    assert sum(down) == total
    assert read_tree(tmp_path / "out") == SAMPLE_TREE


def test_download_refuses_a_blob_whose_size_differs_from_the_manifest(
    azurite: AzureServer, tmp_path: Path
) -> None:
    container = azurite.create_container("tampered")
    storage = _storage(azurite, container)
    with storage.store_path("t") as path:
        write_tree(path, {"w.bin": b"w" * 100})
    blobs = azurite.service().get_container_client(container)
    blobs.upload_blob("t/w.bin", b"short", overwrite=True)
    with pytest.raises(StorageError, match=r"w\.bin arrived with 5 bytes, its manifest says 100"):
        storage.download("t", tmp_path / "out")


def test_probe_writes_and_removes_a_blob_in_a_working_container(azurite: AzureServer) -> None:
    container = azurite.create_container("probed")
    probe(_storage(azurite, container))
    assert _blob_names(azurite, container) == set()


def test_probe_of_a_missing_container_names_the_container_field(azurite: AzureServer) -> None:
    with pytest.raises(InvalidConfig) as caught:
        probe_config_storage(storage_from_config(azurite.config("no-such-container")))
    [detail] = caught.value.details
    assert detail.path == "checkpoint_storage.container"
    assert "'no-such-container'" in detail.message
    assert "does not exist" in detail.message


def test_probe_with_a_wrong_account_key_names_the_credential(azurite: AzureServer) -> None:
    container = azurite.create_container("wrong-key")
    wrong = azurite.connection_string.replace(ACCOUNT_KEY, "d3Jvbmcta2V5" * 4)
    storage = storage_from_config(
        {"type": "azure", "container": container, "connection_string": wrong}
    )
    with pytest.raises(InvalidConfig) as caught:
        probe_config_storage(storage)
    [detail] = caught.value.details
    assert detail.path == "checkpoint_storage.credential"
    assert "refused the credentials" in detail.message


def test_probe_of_an_account_url_nobody_answers_names_account_url() -> None:
    url = f"http://127.0.0.1:{free_port()}/devstoreaccount1"
    storage = storage_from_config(
        {"type": "azure", "container": "c", "account_url": url, "credential": "a2V5"}
    )
    assert isinstance(storage, AzureStorage)
    with pytest.raises(InvalidConfig) as caught:
        probe_config_storage(storage)
    [detail] = caught.value.details
    assert detail.path == "checkpoint_storage.account_url"
    assert detail.message.startswith(f"azure container 'c' at {url} is not reachable: ")
