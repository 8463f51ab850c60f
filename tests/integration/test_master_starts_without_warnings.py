"""A master starts and serves every route without a warning in its log: pydantic's
UnsupportedFieldAttributeWarning ('alias' 'body') came from request models whose build was
deferred past FastAPI's own handling of it."""

from __future__ import annotations

import httpx
import pytest

from tests.integration.cluster import Cluster

pytestmark = pytest.mark.integration


def test_the_master_logs_no_warning_at_start_or_when_its_bodies_are_read(
    cluster: Cluster,
) -> None:
    # The API document and a request with a JSON body: every body's adapter is built.
    assert httpx.get(f"{cluster.url}/openapi.json", timeout=30).status_code == 200
    cluster.client.create_model("warned")
    log = cluster.log("master")
    assert "UnsupportedFieldAttributeWarning" not in log, log
