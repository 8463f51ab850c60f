"""The master config's ``storage_endpoints``: the object stores an admin lets the master itself
contact for experiments' checkpoint storage."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.config import InvalidConfig, load_master_config


def test_storage_endpoints_are_urls_of_object_stores(tmp_path: Path) -> None:
    path = tmp_path / "master.yaml"
    path.write_text(
        "storage_endpoints: ['http://minio.internal:9000', "
        "'https://127.0.0.1:10000/devstoreaccount1']\n"
    )
    assert load_master_config(path).storage_endpoints == [
        "http://minio.internal:9000",
        "https://127.0.0.1:10000/devstoreaccount1",
    ]
    assert load_master_config(None).storage_endpoints == []


@pytest.mark.parametrize(
    "entry",
    ["minio.internal:9000", "ftp://minio", "http://user@minio", "http://minio?x=1", "http://"],
)
def test_a_storage_endpoint_that_is_no_url_is_refused_naming_the_entry(
    tmp_path: Path, entry: str
) -> None:
    path = tmp_path / "master.yaml"
    path.write_text(f"storage_endpoints: ['{entry}']\n")
    with pytest.raises(InvalidConfig) as caught:
        load_master_config(path)
    [detail] = caught.value.details
    assert detail.path == "storage_endpoints[0]"
    assert "scheme://host[:port]" in detail.message
