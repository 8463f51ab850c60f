"""GCS storage passes the conformance kit against a local Cloud Storage emulator
(gcp-storage-emulator, which google-cloud-storage reaches through STORAGE_EMULATOR_HOST)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.errors import InvalidConfig
from assay.storage import StorageManager, probe, probe_config_storage, storage_from_config
from assay.storage.testing import StorageConformance, write_tree
from tests.integration.cluster import free_port

BUCKET = "gcs-conformance"


@pytest.fixture(scope="module")
def emulator() -> Iterator[str]:
    from gcp_storage_emulator.server import create_server

    port = free_port()
    server = create_server("127.0.0.1", port, in_memory=True, default_bucket=BUCKET)
    server.start()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("STORAGE_EMULATOR_HOST", f"http://127.0.0.1:{port}")
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.stop()


class TestGCSConformance(StorageConformance):
    @pytest.fixture(autouse=True)
    def _emulator(self, emulator: str) -> None:
        pass

    def make_storage(self, root: Path) -> StorageManager:
        prefix = "runs/" + hashlib.sha256(str(root).encode()).hexdigest()[:16]
        return storage_from_config({"type": "gcs", "bucket": BUCKET, "prefix": prefix})


def test_probe_passes_for_a_bucket_and_names_the_bucket_when_it_is_missing(
    emulator: str, tmp_path: Path
) -> None:
    storage = storage_from_config({"type": "gcs", "bucket": BUCKET, "prefix": "probed"})
    probe(storage)
    write_tree(tmp_path / "src", {"f": b"x"})
    storage.upload(tmp_path / "src", "after-probe")
    assert storage.list_files("after-probe") == {"f": 1}
    with pytest.raises(InvalidConfig) as caught:
        probe_config_storage(storage_from_config({"type": "gcs", "bucket": "missing-bucket"}))
    [detail] = caught.value.details
    assert detail.path == "checkpoint_storage.bucket"
    assert detail.message.startswith("gcs bucket 'missing-bucket' does not exist")
