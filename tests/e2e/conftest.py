"""What the web UI's tests need: the built UI, Node (for the type check) and Debian's Chromium.

Without them a test is skipped with the reason, except under ``CI=true``, where a missing piece
is a failure: CI must never pass by not testing the UI.

The cluster and the signed-in browser page are the session's: every module of web UI tests
shares them, so a master and agent start once."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.api._webui import DIST
from tests.integration.cluster import Cluster, serve


def need(missing: str | None) -> None:
    """Skip (or fail under CI) when ``missing`` names what is not there."""
    if missing is None:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{missing} (CI=true: the web UI tests must run)")
    pytest.skip(missing)


def need_ui() -> None:
    """Skip (or fail under CI) without the built UI or Debian's Chromium."""
    need(None if (DIST / "index.html").is_file() else "the web UI is not built: run make webui")
    need(None if CHROMIUM.exists() else "no /usr/bin/chromium: apt-get install chromium")


CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
SHOTS = os.environ.get("ASSAY_WEBUI_SCREENSHOTS")


def shot(tab: Any, name: str) -> None:
    """Save the page's screenshot as ``name`` when ``ASSAY_WEBUI_SCREENSHOTS`` names a folder."""
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        # From the top: a page scrolled by the test would draw its sticky header (and sticky
        # table heads) where the scroll left them, in the middle of the whole-page picture.
        tab.evaluate("window.scrollTo(0, 0)")
        tab.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)


@pytest.fixture(scope="session")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Cluster]:
    """One master and agent for every web UI test of the session (started once: it is slow)."""
    need_ui()
    c = Cluster(tmp_path_factory.mktemp("webui") / "home")
    c.start_master()
    c.start_agent("agent-1", slots=2)
    yield from serve(c, request)


@contextlib.contextmanager
def signed_in_page(cluster: Cluster) -> Iterator[Any]:
    """A browser page of Debian's Chromium signed in to ``cluster`` through the UI's sign-in
    form, as its admin."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            tab = browser.new_page(viewport={"width": 1400, "height": 1000})
            tab.set_default_timeout(30_000)
            tab.goto(f"{cluster.url}/experiments")
            tab.wait_for_url(re.compile(r"/sign-in"))
            shot(tab, "sign-in")
            tab.get_by_label("User").fill("admin")
            tab.get_by_label("Password").fill(cluster.admin_password)
            tab.get_by_role("button", name="Sign in").click()
            tab.wait_for_url(re.compile(r"/experiments$"))
            yield tab
        finally:
            browser.close()


@pytest.fixture(scope="module")
def page(cluster: Cluster) -> Iterator[Any]:
    """A browser page signed in through the UI's sign-in form.

    Module-scoped, not session-scoped: while Playwright's sync API is open its event loop counts
    as running in this thread, so every later test that calls ``asyncio.run`` would fail."""
    with signed_in_page(cluster) as tab:
        yield tab
