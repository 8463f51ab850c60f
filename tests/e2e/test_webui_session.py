"""The web UI's session in a real browser: it is the master's HttpOnly cookie, so no script of
a page (the UI's, or a proxied app's on the same origin) can read it, and the page keeps no
token in its storage; signing out clears it; the sign-in link's token travels in the fragment,
so it never reaches the master's request line."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from tests.integration.cluster import Cluster

pytestmark = pytest.mark.integration


def _storage_and_cookies(tab: Any) -> dict[str, str]:
    held: dict[str, str] = tab.evaluate(
        """() => ({
            local: JSON.stringify({...localStorage}),
            session: JSON.stringify({...sessionStorage}),
            cookie: document.cookie,
        })"""
    )
    return held


def test_after_signing_in_no_script_can_read_the_session(cluster: Cluster, page: Any) -> None:
    page.goto(f"{cluster.url}/experiments")
    page.get_by_role("button", name="Sign out").wait_for()
    [session] = [c for c in page.context.cookies() if c["name"] == "assay_session"]
    assert session["httpOnly"] is True and session["sameSite"] == "Strict"
    assert session["path"] == "/api/"
    held = _storage_and_cookies(page)
    for where, text in held.items():
        assert session["value"] not in text, where
        assert "assay_session" not in text, where
    # Nor can a page under /proxy/, where a proxied app's pages are served.
    page.goto(f"{cluster.url}/proxy/1/")
    assert session["value"] not in page.evaluate("() => document.cookie")


def test_the_sign_in_link_keeps_its_token_out_of_every_request_line(
    cluster: Cluster, page: Any
) -> None:
    made = httpx.post(
        f"{cluster.url}/api/v1/auth/one-time-tokens", headers=cluster.auth_headers()
    ).json()
    context = page.context.browser.new_context()
    try:
        tab = context.new_page()
        tab.set_default_timeout(30_000)
        sent: list[str] = []
        tab.on("request", lambda request: sent.append(request.url))
        tab.goto(f"{cluster.url}/experiments#token={made['token']}")
        tab.get_by_role("button", name="Sign out").wait_for()
        assert made["token"] not in tab.url
        assert not any(made["token"] in url for url in sent), sent
        assert all(made["token"] not in text for text in _storage_and_cookies(tab).values())
        assert tab.evaluate("() => history.length") >= 1 and "#" not in tab.url
    finally:
        context.close()


def test_signing_out_ends_the_session_and_clears_its_cookie(cluster: Cluster, page: Any) -> None:
    context = page.context.browser.new_context()
    try:
        tab = context.new_page()
        tab.set_default_timeout(30_000)
        tab.goto(f"{cluster.url}/sign-in")
        tab.get_by_label("User").fill("admin")
        tab.get_by_label("Password").fill(cluster.admin_password)
        tab.get_by_role("button", name="Sign in").click()
        tab.wait_for_url(re.compile(r"/experiments$"))
        [session] = [c for c in context.cookies() if c["name"] == "assay_session"]
        tab.get_by_role("button", name="Sign out").click()
        tab.wait_for_url(re.compile(r"/sign-in"))
        assert not [c for c in context.cookies() if c["name"] == "assay_session"]
        gone = httpx.get(f"{cluster.url}/api/v1/me", cookies={"assay_session": session["value"]})
        assert gone.status_code == 401, "the session ended on the master too"
    finally:
        context.close()
