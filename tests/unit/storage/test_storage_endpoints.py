"""Which object-store servers a storage contacts: the master builds every storage with its
admin's (``storage_from_config(..., limit=...)``), a probe never quotes a server's answer, and
no request is made with a timeout of 0. A stand-in HTTP server on loopback plays the object
store and records what it is sent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.errors import InvalidConfig, StorageError
from assay.storage import (
    EndpointLimit,
    EndpointNotAllowed,
    _s3,
    probe_config_storage,
    storage_endpoint,
    storage_from_config,
)
from tests.http_stub import Recorded, refusing_store, serving

REMOTE_WORDS = "words-the-remote-server-chose"


@pytest.fixture
def store() -> Iterator[tuple[str, Recorded]]:
    recorded = Recorded()
    with serving(refusing_store(recorded, REMOTE_WORDS)) as url:
        yield url, recorded


def _s3_config(url: str, **extra: Any) -> dict[str, Any]:
    return {"type": "s3", "bucket": "b", "endpoint_url": url, **extra}


def test_a_limited_storage_never_contacts_an_s3_endpoint_it_was_not_given(
    store: tuple[str, Recorded], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, recorded = store
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIA-THE-MASTERS-OWN")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "the-masters-own-secret")
    limit = EndpointLimit(["http://minio.internal:9000"])
    storage = storage_from_config(_s3_config(url), limit=limit)
    for use in (
        lambda: storage.exists("0b6f7a52-9d7e-4a53-8c1e-2f3a4b5c6d7e"),
        lambda: storage.list_files("0b6f7a52-9d7e-4a53-8c1e-2f3a4b5c6d7e"),
        lambda: storage.delete("0b6f7a52-9d7e-4a53-8c1e-2f3a4b5c6d7e"),
    ):
        with pytest.raises(EndpointNotAllowed) as caught:
            use()
        assert caught.value.status == 409
        [detail] = caught.value.details
        assert detail.path == "endpoint_url"
        assert "storage_endpoints" in caught.value.message
        assert "\n" not in caught.value.message
    assert recorded.requests == [], "nothing was sent to the endpoint"


def test_a_limited_storage_never_contacts_an_azure_endpoint_it_was_not_given(
    store: tuple[str, Recorded],
) -> None:
    url, recorded = store
    connection = (
        f"DefaultEndpointsProtocol=http;AccountName=acct;AccountKey=a2V5;BlobEndpoint={url}/acct;"
    )
    for config, key in (
        ({"type": "azure", "container": "c", "connection_string": connection}, "connection_string"),
        ({"type": "azure", "container": "c", "account_url": f"{url}/acct"}, "account_url"),
    ):
        storage = storage_from_config(config, limit=EndpointLimit([]))
        with pytest.raises(EndpointNotAllowed) as caught:
            storage.exists("0b6f7a52-9d7e-4a53-8c1e-2f3a4b5c6d7e")
        assert [d.path for d in caught.value.details] == [key]
    assert recorded.requests == []


def test_an_endpoint_is_allowed_by_scheme_host_and_port_alone() -> None:
    limit = EndpointLimit(["http://MinIO.internal:9000/some/path", "https://store.example"])

    def allows(url: str, key: str = "endpoint_url") -> bool:
        endpoint = storage_endpoint(storage_from_config(_s3_config(url)))
        return limit.allows(endpoint)

    assert allows("http://minio.internal:9000")
    assert allows("http://minio.internal:9000/other")
    assert allows("https://store.example:443")
    assert not allows("http://minio.internal:9001")
    assert not allows("https://minio.internal:9000")
    assert not allows("http://store.example")
    # A user part is read differently by different parsers: never taken for an allowed host.
    assert not allows("http://minio.internal:9000@evil.example")
    assert not allows("http://evil.example\\@minio.internal:9000")
    # The clouds' own services need no entry.
    assert limit.allows(storage_endpoint(storage_from_config({"type": "s3", "bucket": "b"})))
    cloud = "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5"
    azure = storage_from_config({"type": "azure", "container": "c", "connection_string": cloud})
    assert limit.allows(storage_endpoint(azure))
    suffix = f"{cloud};EndpointSuffix=evil.example"
    other = storage_from_config({"type": "azure", "container": "c", "connection_string": suffix})
    assert not limit.allows(storage_endpoint(other))


def test_a_probe_with_a_limit_leaves_a_storage_on_another_server_alone(
    store: tuple[str, Recorded],
) -> None:
    url, recorded = store
    storage = storage_from_config(_s3_config(url, access_key="a", secret_key="s"))
    assert probe_config_storage(storage, allowed=EndpointLimit([])) is False
    assert recorded.requests == []
    with pytest.raises(InvalidConfig):
        probe_config_storage(storage, allowed=EndpointLimit([url]))
    assert recorded.requests, "a storage on an allowed server is probed"


def test_a_probe_never_quotes_what_the_server_answered(store: tuple[str, Recorded]) -> None:
    url, _ = store
    storage = storage_from_config(_s3_config(url, access_key="a", secret_key="s"))
    with pytest.raises(InvalidConfig) as caught:
        probe_config_storage(storage)
    [detail] = caught.value.details
    assert detail.path == "checkpoint_storage.access_key"
    assert detail.message == (
        f"s3 bucket 'b' at {url} refused the credentials or access (AccessDenied, HTTP 403)"
    )
    assert REMOTE_WORDS not in str(caught.value)


def test_a_trial_side_error_keeps_the_servers_words(store: tuple[str, Recorded]) -> None:
    """Outside the master (no limit, not a probe) the words help the storage's owner, who
    runs the process that gets them."""
    url, _ = store
    storage = storage_from_config(_s3_config(url, access_key="a", secret_key="s"))
    with pytest.raises(StorageError, match=REMOTE_WORDS):
        storage.list_keys("tensorboard/1")


def test_a_limited_storage_does_not_quote_an_allowed_servers_answer_either(
    store: tuple[str, Recorded],
) -> None:
    url, recorded = store
    limit = EndpointLimit([url])
    storage = storage_from_config(_s3_config(url, access_key="a", secret_key="s"), limit=limit)
    with pytest.raises(StorageError) as caught:
        storage.list_keys("tensorboard/1")
    assert recorded.requests, "an allowed server is contacted"
    assert REMOTE_WORDS not in str(caught.value)
    assert "HTTP 403" in caught.value.message


def test_a_probe_without_credentials_never_sets_a_timeout_of_0(
    store: tuple[str, Recorded], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Without credentials boto3 asks the instance-metadata service, with the probe's short
    timeout: botocore takes it in whole seconds, and half of the probe's 1.5 s made 0."""
    url, _ = store
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("AWS_EC2_METADATA_DISABLED", raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    # The metadata service is the stand-in server too: it refuses, so there are no credentials.
    monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", url)
    # botocore keeps the credentials a session found: a fresh session sees this environment.
    monkeypatch.setattr(_s3, "_sessions", {})
    monkeypatch.setattr(_s3, "_clients", {})
    storage = storage_from_config(_s3_config(url))
    with pytest.raises(InvalidConfig) as caught:
        probe_config_storage(storage)
    [detail] = caught.value.details
    assert "timeout" not in detail.message, detail.message
    assert detail.path == "checkpoint_storage.access_key"
    assert detail.message.startswith(f"no credentials for s3 bucket 'b' at {url}")
    assert _s3.metadata_timeout(1.5) == 1
    assert _s3.metadata_timeout(0.1) == 1
