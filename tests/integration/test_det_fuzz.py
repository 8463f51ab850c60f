"""Determined's surface under ``/det`` driven by schemathesis against a real master and agent:
no input makes it answer 5xx, and every answer is JSON (never the web UI's page). Its routes
are left out of assay's own OpenAPI document, so the document fuzzed here is made from the
routes themselves, as the master serves them."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute
from hypothesis import HealthCheck, settings
from schemathesis import Case
from schemathesis.checks import not_a_server_error

from assay.api.determined import SERVED
from tests.integration.cluster import Cluster

pytestmark = pytest.mark.integration

SIGNS_OUT = "auth/logout"
"""Signing out ends the sign-in the other examples use: left out (tested with ``det``)."""


def _spec() -> dict[str, Any]:
    routes = []
    for router in SERVED:
        for route in router.routes:
            assert isinstance(route, APIRoute)
            shown = copy.copy(route)
            shown.include_in_schema = True
            routes.append(shown)
    return get_openapi(title="Determined's API on assay", version="0.38.1", routes=routes)


schema = schemathesis.openapi.from_dict(_spec())

FUZZ = settings(
    max_examples=8, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = Cluster(tmp_path_factory.mktemp("det-fuzz") / "home")
    try:
        c.start_master()
        c.start_agent("agent-1", slots=1)
        c.submit(
            "name: fuzzed\nentrypoint: python3 train.py\n"
            "searcher: {name: single, metric: loss, max_length: {batches: 3}}\n"
        )
        yield c
    finally:
        c.stop()


def _bounded(case: Case) -> None:
    """Streams are read once, not followed, and waits answer at once."""
    query: dict[str, Any] = case.query if case.query is not None else {}
    if "follow" in query:
        query["follow"] = "false"
    case.query = query


@schema.exclude(path_regex=SIGNS_OUT).parametrize()
@FUZZ
def test_no_input_makes_determined_routes_answer_5xx_or_html(case: Case, cluster: Cluster) -> None:
    _bounded(case)
    response = case.call(
        base_url=cluster.url, headers={"Authorization": f"Bearer {cluster.client.http.token}"}
    )
    case.validate_response(response, checks=[not_a_server_error])
    kind = response.headers.get("content-type", "")
    assert "text/html" not in kind, (case.method, case.path, response.text[:200])
