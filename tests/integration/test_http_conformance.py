"""The master speaks HTTP as its OpenAPI document says, on a real master: a method a path does
not take is 405 with every method it takes in ``Allow`` (it was 404, or an ``Allow`` naming one
route's methods), an unknown path under the API is 404 in the API's error shape (never the web
UI's page), and the live event stream's messages, resyncs included, match the schema the
document gives them (it gave a string)."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import response_schema_conformance

from tests.integration.cluster import CONTEXTS, Cluster, serve

pytestmark = pytest.mark.integration

CONFIG = "entrypoint: python3 train.py\nsearcher: {name: single, metric: loss, max_length: 1}\n"


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Cluster]:
    c = Cluster(tmp_path_factory.mktemp("http") / "home")
    c.start_master()
    yield from serve(c, request)


def document(cluster: Cluster) -> dict[str, Any]:
    answer: dict[str, Any] = httpx.get(f"{cluster.url}/openapi.json", timeout=30).json()
    return answer


@pytest.mark.parametrize("signed_in", [True, False])
def test_a_method_a_path_does_not_take_is_405_naming_every_method_it_takes(
    cluster: Cluster, signed_in: bool
) -> None:
    headers = cluster.auth_headers() if signed_in else {}
    with httpx.Client(base_url=cluster.url, headers=headers, timeout=30) as http:
        for method, path, takes in (
            ("PUT", "/api/v1/experiments", "GET, POST"),
            ("DELETE", "/api/v1/experiments/1/pause", "POST"),
            ("OPTIONS", "/api/v1/experiments/1", "DELETE, GET, PATCH"),
            ("POST", "/api/v2/jobs/alice~mnist", "GET"),
            ("HEAD", "/api/v1/master", "GET"),
        ):
            answer = http.request(method, path)
            assert answer.status_code == 405, (method, path, answer.text)
            assert answer.headers["allow"] == takes, (method, path)
            if method != "HEAD":
                error = answer.json()["error"]
                assert error["type"] == "MethodNotAllowed"
                assert error["message"] == f"{method} is not a method of {path}; it takes {takes}"


def test_every_path_of_the_document_answers_405_with_its_own_methods(cluster: Cluster) -> None:
    # Whatever routes there are: each path's Allow is what the document gives it (a concrete
    # path's own, where a templated one matches its URL too).
    for template, operations in document(cluster)["paths"].items():
        path = template.replace("{frame}", "alice~job").replace("{", "").replace("}", "")
        for method in ("TRACE", "OPTIONS"):
            answer = httpx.request(method, f"{cluster.url}{path}", timeout=30)
            assert answer.status_code == 405, (method, path, answer.text)
            assert answer.headers["allow"] == ", ".join(sorted(m.upper() for m in operations))


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "POST"])
def test_an_unknown_api_path_is_404_in_the_error_shape_never_the_uis_page(
    cluster: Cluster, method: str
) -> None:
    for path in ("/api/v1/no-such-thing", "/api/v1/experiments/1/nothing", "/api/v2/nothing"):
        answer = httpx.request(method, f"{cluster.url}{path}", timeout=30)
        assert answer.status_code == 404, (method, path, answer.text)
        assert answer.headers["content-type"] == "application/json"
        assert answer.json()["error"]["type"] == "NotFound"


def read_events(cluster: Cluster, headers: dict[str, str], count: int) -> bytes:
    """The raw bytes of the stream up to the end of its ``count``-th message."""
    got = b""
    with (
        httpx.Client(base_url=cluster.url, timeout=60) as http,
        http.stream(
            "GET", "/api/v1/events", headers={**cluster.auth_headers(), **headers}
        ) as stream,
    ):
        assert stream.status_code == 200
        for chunk in stream.iter_raw():
            got += chunk
            whole = got.rsplit(b"\n\n", 1)[0].split(b"\n\n")
            if sum(b"\nevent: " in message for message in whole) >= count:
                return got
    raise AssertionError(f"the stream ended after {got!r}")


def test_live_events_resyncs_included_match_the_schema_the_document_gives_them(
    cluster: Cluster,
) -> None:
    operation = schemathesis.openapi.from_dict(document(cluster))["/api/v1/events"]["GET"]

    def conforms(raw: bytes) -> None:
        response = httpx.Response(
            200,
            headers={"content-type": "text/event-stream; charset=utf-8"},
            content=raw,
            request=httpx.Request("GET", f"{cluster.url}/api/v1/events"),
        )
        response.elapsed = datetime.timedelta(0)
        operation.Case().validate_response(response, checks=[response_schema_conformance])

    # An id of another run of the master: the stream says resync.
    resync = read_events(cluster, {"Last-Event-ID": "0000-1"}, 1)
    assert b"event: resync\n" in resync
    conforms(resync)
    # A batch, replayed after the position the resync gave, once an experiment was created.
    position = resync.split(b"id: ", 1)[1].split(b"\n", 1)[0].decode()
    cluster.submit(CONFIG, CONTEXTS / "counter", activate=False)
    batch = read_events(cluster, {"Last-Event-ID": position}, 1)
    assert b"event: batch\n" in batch
    conforms(batch)
    # A message that does not match is caught: the check is no formality.
    with pytest.raises(FailureGroup):
        conforms(batch.replace(b'"experiments":', b'"experiments":7,"x":'))
    with pytest.raises(FailureGroup):
        conforms(resync.replace(b"event: resync", b"event: other"))
