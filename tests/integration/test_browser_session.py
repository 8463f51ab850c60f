"""A browser's sign-in on a real master: the session is an HttpOnly, SameSite=Strict cookie
scoped to the API (never in an answer's body), a state-changing request signed in by it needs
the web UI's header, signing out clears it, and every answer carries the headers that keep the
master's pages out of other sites' frames and its URLs out of their logs."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import httpx
import pytest

from tests.integration.cluster import Cluster, serve

pytestmark = pytest.mark.integration

CSRF = {"X-Assay-CSRF": "1"}
OWN_HEADERS = {
    "x-frame-options": "DENY",
    "content-security-policy": "frame-ancestors 'none'",
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
}


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Cluster]:
    c = Cluster(tmp_path_factory.mktemp("browser") / "home")
    c.start_master()
    yield from serve(c, request)


@contextlib.contextmanager
def _signed_in_browser(cluster: Cluster) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=cluster.url, timeout=30) as browser:
        answer = browser.post(
            "/api/v1/auth/browser-login",
            json={"username": "admin", "password": cluster.admin_password},
            headers=CSRF,
        )
        assert answer.status_code == 200, answer.text
        yield browser


def test_a_browser_sign_in_sets_an_httponly_strict_cookie_for_the_api_alone(
    cluster: Cluster,
) -> None:
    with httpx.Client(base_url=cluster.url, timeout=30) as browser:
        answer = browser.post(
            "/api/v1/auth/browser-login",
            json={"username": "admin", "password": cluster.admin_password},
            headers=CSRF,
        )
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["user"]["username"] == "admin" and set(body) == {"user", "expires_at"}
        cookie = answer.headers["set-cookie"]
        flags = {part.strip().split("=")[0].lower() for part in cookie.split(";")}
        assert cookie.startswith("assay_session=")
        assert {"httponly", "path", "samesite", "max-age"} <= flags, cookie
        assert "Path=/api/" in cookie and "SameSite=strict" in cookie
        # Sent only to the API: a proxied app's pages and backend never see it.
        assert browser.cookies.jar and all(c.path == "/api/" for c in browser.cookies.jar)
        assert browser.get("/api/v1/me").json()["username"] == "admin"


def test_a_state_change_signed_in_by_the_cookie_alone_is_refused_without_the_header(
    cluster: Cluster,
) -> None:
    with _signed_in_browser(cluster) as browser:
        forged = browser.post("/api/v1/tokens", json={"description": "forged"})
        assert forged.status_code == 403, forged.text
        message = forged.json()["error"]["message"]
        assert "X-Assay-CSRF" in message and "Authorization: Bearer" in message
        assert "\n" not in message
        made = browser.post("/api/v1/tokens", json={"description": "from the ui"}, headers=CSRF)
        assert made.status_code == 201, made.text
        # Reads need no header; a program's bearer token needs none either.
        assert browser.get("/api/v1/tokens").status_code == 200
    program = httpx.post(
        f"{cluster.url}/api/v1/tokens",
        json={"description": "a script's"},
        headers=cluster.auth_headers(),
    )
    assert program.status_code == 201, program.text


def test_checkpoint_reads_take_the_cookie_so_a_download_link_works(cluster: Cluster) -> None:
    # A link's GET carries the cookie and no header: it is read as the signed-in user (here a
    # 404 for a checkpoint that is not there), where no cookie is a 401.
    path = "/api/v1/checkpoints/no-such-checkpoint/files"
    with _signed_in_browser(cluster) as browser:
        assert browser.get(path).status_code == 404
        assert browser.delete("/api/v1/checkpoints/no-such-checkpoint").status_code == 403
    assert httpx.get(cluster.url + path).status_code == 401


def test_signing_a_browser_in_needs_the_header_too(cluster: Cluster) -> None:
    with httpx.Client(base_url=cluster.url, timeout=30) as browser:
        answer = browser.post(
            "/api/v1/auth/browser-login",
            json={"username": "admin", "password": cluster.admin_password},
        )
        assert answer.status_code == 403
        assert "set-cookie" not in answer.headers and not browser.cookies
        made = cluster.client.one_time_token()
        link = browser.post("/api/v1/auth/one-time", json={"token": made.token})
        assert link.status_code == 403 and not browser.cookies


def test_signing_out_ends_the_session_and_clears_the_cookie(cluster: Cluster) -> None:
    with _signed_in_browser(cluster) as browser:
        session = browser.cookies["assay_session"]
        out = browser.post("/api/v1/auth/logout", headers=CSRF)
        assert out.status_code == 204, out.text
        cleared = out.headers["set-cookie"]
        assert cleared.startswith('assay_session=""') or cleared.startswith("assay_session=;")
        assert "Max-Age=0" in cleared and "Path=/api/" in cleared
        assert not browser.cookies
    again = httpx.get(f"{cluster.url}/api/v1/me", cookies={"assay_session": session})
    assert again.status_code == 401


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/api/v1/master", 200),
        ("GET", "/api/v1/experiments", 401),
        ("GET", "/", 200),
        ("GET", "/experiments", 200),
        ("GET", "/docs", 200),
        ("POST", "/api/v1/auth/login", 400),
    ],
)
def test_the_masters_own_answers_may_not_be_framed_and_send_no_referrer(
    cluster: Cluster, method: str, path: str, status: int
) -> None:
    answer = httpx.request(method, f"{cluster.url}{path}", json={}, timeout=30)
    assert answer.status_code == status
    for name, value in OWN_HEADERS.items():
        assert answer.headers.get_list(name) == [value], (name, answer.headers)


def test_a_refusal_of_the_guard_carries_the_headers_too(cluster: Cluster) -> None:
    answer = httpx.get(
        f"{cluster.url}/api/v1/master", headers={"Host": "rebound.example"}, timeout=30
    )
    assert answer.status_code == 400
    assert answer.headers["x-frame-options"] == "DENY"


def test_a_proxied_page_may_be_framed_by_its_own_origin_alone(cluster: Cluster) -> None:
    """TensorBoard frames its own plugin pages: ``DENY`` would break it."""
    for path, status in (("/proxy/5", 307), ("/proxy/5/", 401)):
        answer = httpx.get(f"{cluster.url}{path}", follow_redirects=False, timeout=30)
        assert answer.status_code == status
        assert answer.headers["x-frame-options"] == "SAMEORIGIN"
        assert answer.headers.get_list("content-security-policy") == ["frame-ancestors 'self'"]
        assert answer.headers["referrer-policy"] == "no-referrer"
