"""The API docs pages work offline: everything they load comes from the master itself."""

from __future__ import annotations

import http.client
import re
from html.parser import HTMLParser

import pytest

from tests.integration.cluster import Cluster

pytestmark = pytest.mark.integration


class _References(HTMLParser):
    """Every URL an HTML page makes the browser load: src and href attributes, ReDoc's
    spec-url, and the OpenAPI URL Swagger UI's inline script fetches."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._in_script = tag == "script"
        for name, value in attrs:
            if name in ("src", "href", "spec-url") and value:
                self.urls.append(value)

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.urls.extend(re.findall(r"""\burl:\s*['"]([^'"]+)['"]""", data))


def fetch(cluster: Cluster, path: str) -> tuple[int, str, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", cluster.port, timeout=30)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.getheader("content-type") or "", response.read()
    finally:
        conn.close()


EXPECTED_TYPES = {
    ".js": "javascript",
    ".css": "text/css",
    ".png": "image/png",
    ".json": "application/json",
}


@pytest.mark.parametrize(
    ("page", "needs"),
    [
        ("/docs", {"swagger-ui-bundle.js", "swagger-ui.css", "favicon.png", "openapi.json"}),
        ("/redoc", {"redoc.standalone.js", "favicon.png", "openapi.json"}),
    ],
)
def test_docs_page_loads_only_the_masters_own_urls_and_each_is_served(
    cluster: Cluster, page: str, needs: set[str]
) -> None:
    status, content_type, body = fetch(cluster, page)
    assert status == 200 and content_type.startswith("text/html")
    html = body.decode()
    elsewhere = re.findall(r"(?:https?:)?//[a-z0-9][^\s\"'<>]*", html, re.IGNORECASE)
    assert not elsewhere, f"{page} names another host: {elsewhere}"
    finder = _References()
    finder.feed(html)
    assert {url.rsplit("/", 1)[-1] for url in finder.urls} == needs
    for url in finder.urls:
        assert url.startswith("/"), f"{page} refers to {url!r}, not a path on the master"
        status, content_type, asset = fetch(cluster, url)
        assert status == 200, f"{url} answered {status}"
        suffix = url[url.rindex(".") :]
        assert EXPECTED_TYPES[suffix] in content_type, f"{url} served as {content_type}"
        assert len(asset) > 1000, f"{url} is only {len(asset)} bytes"
