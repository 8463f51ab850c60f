"""S3 storage passes the conformance kit against a real S3-compatible server (moto's), keeps
checkpoints invisible until their manifest is written, and says what is wrong with a config."""

from __future__ import annotations

import hashlib
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
from assay.storage._s3 import S3Storage
from assay.storage.testing import (
    SAMPLE_TREE,
    FileStoreConformance,
    StorageConformance,
    read_tree,
    write_tree,
)
from tests.s3_server import S3Server

BUCKET = "conformance"


@pytest.fixture(scope="module")
def bucket(s3: S3Server) -> str:
    return s3.create_bucket(BUCKET)


class TestS3Conformance(StorageConformance):
    @pytest.fixture(autouse=True)
    def _server(self, s3: S3Server, bucket: str) -> None:
        self.server = s3

    def make_storage(self, root: Path) -> StorageManager:
        # One bucket for all; each test's storage is a prefix of its own.
        prefix = "runs/" + hashlib.sha256(str(root).encode()).hexdigest()[:16]
        return storage_from_config(self.server.config(BUCKET, prefix=prefix))


def _storage(s3: S3Server, bucket: str, prefix: str) -> S3Storage:
    storage = storage_from_config(s3.config(bucket, prefix=prefix))
    assert isinstance(storage, S3Storage)
    return storage


def test_objects_live_under_prefix_and_uuid_with_the_manifest_beside(
    s3: S3Server, bucket: str
) -> None:
    storage = _storage(s3, bucket, "/team/ckpts/")
    with storage.store_path("abc") as path:
        write_tree(path, {"model.bin": b"m" * 10, "sub/x.txt": b"x"})
    keys = {
        o["Key"] for o in s3.client().list_objects_v2(Bucket=bucket, Prefix="team/")["Contents"]
    }
    assert keys == {
        "team/ckpts/abc/model.bin",
        "team/ckpts/abc/sub/x.txt",
        "team/ckpts/.assay-manifests/abc.json",
    }


def test_objects_without_a_manifest_are_not_a_checkpoint(s3: S3Server, bucket: str) -> None:
    storage = _storage(s3, bucket, "half-written")
    s3.client().put_object(Bucket=bucket, Key="half-written/crashed/model.bin", Body=b"x")
    assert not storage.exists("crashed")
    with storage.store_path("crashed") as path:
        write_tree(path, {"complete.bin": b"yy"})
    assert storage.list_files("crashed") == {"complete.bin": 2}
    storage.delete("crashed")
    left = s3.client().list_objects_v2(Bucket=bucket, Prefix="half-written/")
    assert left.get("KeyCount") == 0, "delete removes stray objects under the uuid too"


def test_upload_and_download_report_progress_adding_up_to_the_size(
    s3: S3Server, bucket: str, tmp_path: Path
) -> None:
    storage = _storage(s3, bucket, "progress")
    write_tree(tmp_path / "src", SAMPLE_TREE)
    up: list[int] = []
    storage.upload(tmp_path / "src", "p", progress=up.append)
    total = sum(len(c) for c in SAMPLE_TREE.values() if c)
    assert sum(up) == total
    down: list[int] = []
    storage.download("p", tmp_path / "out", progress=down.append)
    assert sum(down) == total
    assert read_tree(tmp_path / "out") == SAMPLE_TREE


def test_download_refuses_an_object_whose_size_differs_from_the_manifest(
    s3: S3Server, bucket: str, tmp_path: Path
) -> None:
    storage = _storage(s3, bucket, "tampered")
    with storage.store_path("t") as path:
        write_tree(path, {"w.bin": b"w" * 100})
    s3.client().put_object(Bucket=bucket, Key="tampered/t/w.bin", Body=b"short")
    with pytest.raises(StorageError, match=r"w\.bin arrived with 5 bytes, its manifest says 100"):
        storage.download("t", tmp_path / "out")


def test_probe_writes_and_removes_an_object_in_a_working_bucket(s3: S3Server, bucket: str) -> None:
    storage = _storage(s3, bucket, "probed")
    probe(storage)
    assert s3.client().list_objects_v2(Bucket=bucket, Prefix="probed/").get("KeyCount") == 0


def test_probe_of_a_missing_bucket_names_the_bucket_field(s3: S3Server) -> None:
    storage = storage_from_config(s3.config("no-such-bucket"))
    with pytest.raises(InvalidConfig) as caught:
        probe_config_storage(storage)
    [detail] = caught.value.details
    assert detail.path == "checkpoint_storage.bucket"
    assert detail.message == f"s3 bucket 'no-such-bucket' at {s3.endpoint_url} does not exist"


def test_probe_of_an_endpoint_nobody_answers_says_it_is_not_reachable() -> None:
    from tests.integration.cluster import free_port

    url = f"http://127.0.0.1:{free_port()}"
    storage = storage_from_config(
        {"type": "s3", "bucket": "b", "endpoint_url": url, "access_key": "a", "secret_key": "s"}
    )
    with pytest.raises(InvalidConfig) as caught:
        probe_config_storage(storage)
    [detail] = caught.value.details
    assert detail.path == "checkpoint_storage.endpoint_url"
    assert detail.message.startswith(f"s3 bucket 'b' at {url} is not reachable: ")


def test_probe_without_any_credentials_says_where_to_put_them(
    s3: S3Server, bucket: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    storage = storage_from_config({"type": "s3", "bucket": bucket, "endpoint_url": s3.endpoint_url})
    with pytest.raises(InvalidConfig) as caught:
        probe_config_storage(storage)
    [detail] = caught.value.details
    assert detail.path == "checkpoint_storage.access_key"
    assert "AWS_ACCESS_KEY_ID" in detail.message


def test_credentials_from_the_environment_are_used_when_the_config_has_none(
    s3: S3Server, bucket: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "from-env")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "from-env-secret")
    storage = storage_from_config(
        {"type": "s3", "bucket": bucket, "endpoint_url": s3.endpoint_url, "prefix": "env"}
    )
    with storage.store_path("e") as path:
        write_tree(path, {"f": b"1"})
    assert storage.list_files("e") == {"f": 1}


def test_access_key_without_secret_key_is_refused_naming_the_missing_one() -> None:
    with pytest.raises(InvalidConfig) as caught:
        storage_from_config({"type": "s3", "bucket": "b", "access_key": "a"})
    assert [d.path for d in caught.value.details] == ["checkpoint_storage.secret_key"]


class TestS3Files(FileStoreConformance):
    """TensorBoard's files go to the bucket too, beside the checkpoints."""

    @pytest.fixture(autouse=True)
    def _server(self, s3: S3Server, bucket: str) -> None:
        self.server = s3

    def make_store(self, root: Path) -> FileStore:
        prefix = "files/" + hashlib.sha256(str(root).encode()).hexdigest()[:16]
        store = storage_from_config(self.server.config(BUCKET, prefix=prefix))
        assert isinstance(store, FileStore)
        return store

    def assert_holds(self, store: FileStore, key: str, data: bytes) -> None:
        assert isinstance(store, S3Storage)
        assert store.client.get_bytes(store.prefix + key) == data


def test_a_bucket_that_is_gone_holds_nothing_to_delete(s3: S3Server) -> None:
    storage = _storage(s3, "never-created", "runs")
    assert not storage.exists("0b6f7a52-9d7e-4a53-8c1e-2f3a4b5c6d7e")
    assert storage.list_keys("tensorboard/1") == {}
    storage.delete_prefix("tensorboard/1")  # nothing there: not an error
