"""Azure storage is built from Determined's keys and its probe says what is wrong. (No Azure
Blob server runs in the tests; the layout and atomicity it shares with s3 and gcs are checked
by their conformance runs.)"""

from __future__ import annotations

import pytest

from assay.errors import InvalidConfig
from assay.storage import probe_config_storage, storage_from_config
from assay.storage._azure import AzureStorage
from tests.integration.cluster import free_port


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
