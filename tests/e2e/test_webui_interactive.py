"""The Notebooks and Shells pages in a real browser against the session's cluster: a notebook
started from the page's form on no slot shows ready there, its Open button brings up JupyterLab
in a new tab (signed in by a one-time token that never reaches the tab's address), Kill ends it
and its Logs link shows its output; a start the master refuses says why beside the form; a shell
started from the page shows the command that opens a terminal in it, which its Copy button puts
on the clipboard.

Everything here runs on no slot, so it runs beside whatever else holds the agent's slots."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from assay import rest
from tests.e2e.conftest import shot
from tests.integration.cluster import Cluster, wait_for

pytestmark = pytest.mark.integration

pytest.importorskip(
    "jupyterlab", reason="notebooks need jupyterlab (pip install 'assay[notebook]')"
)

STARTS = 120_000
"""Milliseconds a notebook or shell may take from its start to running."""


def _open_page(cluster: Cluster, page: Any, name: str) -> None:
    page.goto(f"{cluster.url}/experiments")
    page.get_by_role("navigation", name="main").get_by_role("link", name=name).click()
    page.wait_for_url(re.compile(rf"/{name.lower()}$"))


def _started(what: str, listing: Any, name: str) -> Any:
    """The one notebook or shell called ``name`` in ``listing()``, once the master has it."""
    return wait_for(
        f"the {what} {name!r} to be listed",
        lambda: next((x for x in listing() if x.name == name), None),
    )


def test_a_notebook_started_from_the_page_opens_jupyterlab_in_a_new_tab_and_ends_when_killed(
    cluster: Cluster, page: Any
) -> None:
    _open_page(cluster, page, "Notebooks")
    form = page.get_by_role("form", name="start a notebook")
    form.get_by_label("Slots", exact=True).fill("0")
    form.get_by_label("Description").fill("lab from the page")
    form.get_by_label("Idle timeout").fill("30m")
    form.get_by_role("button", name="Start notebook").click()

    book: rest.Notebook = _started("notebook", cluster.client.notebooks, "lab from the page")
    assert (book.slots, book.user, book.idle_timeout) == (0, "admin", 1800)
    table = page.get_by_role("table", name="notebooks")
    row = table.get_by_role("row").filter(has_text="lab from the page")
    expect(row).to_contain_text("admin")
    expect(row).to_contain_text("30m")
    # Shown ready without a reload, and only then may it be opened.
    row.get_by_text("ready", exact=True).wait_for(timeout=STARTS)
    shot(page, "notebooks")
    with page.expect_popup() as opened:
        row.get_by_role("button", name=f"open notebook {book.id}").click()
    tab = opened.value
    tab.wait_for_url(re.compile(rf"/proxy/{book.id}/lab"), timeout=STARTS)
    expect(tab).to_have_title(re.compile("JupyterLab"), timeout=STARTS)
    tab.locator("#jp-main-dock-panel").wait_for(timeout=STARTS)
    # The one-time token was spent by the page's own request: it is in no address the tab had.
    assert "token" not in tab.url
    tab.close()

    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name=f"kill notebook {book.id}").click()
    # It leaves the list of those running or waiting, and ends.
    expect(row).to_have_count(0, timeout=STARTS)
    ended = wait_for(
        "the notebook to end",
        lambda: (b := cluster.client.notebook(book.id)).ended_at is not None and b,
    )
    assert ended.state == "STOPPED"
    # Still listed with the ended ones, its state as the master says it. The box shows the URL,
    # which the router updates a moment after the click (check() wants it changed at once).
    page.get_by_label("Show ended ones").click()
    page.wait_for_url(re.compile(r"ended=1"))
    expect(page.get_by_label("Show ended ones")).to_be_checked()
    expect(row).to_contain_text("STOPPED")
    expect(row.get_by_role("button", name=f"open notebook {book.id}")).to_have_count(0)
    row.get_by_role("link", name=f"logs of notebook {book.id}").click()
    page.wait_for_url(re.compile(rf"/tasks/{book.id}$"))
    expect(page.get_by_label("logs", exact=True)).to_contain_text("[notebook/0]")


def test_a_start_the_master_refuses_says_why_beside_the_form(cluster: Cluster, page: Any) -> None:
    _open_page(cluster, page, "Notebooks")
    form = page.get_by_role("form", name="start a notebook")
    form.get_by_label("Slots", exact=True).fill("0")
    form.get_by_label("Description").fill("never started")
    form.get_by_label("Idle timeout").fill("soon")
    form.get_by_role("button", name="Start notebook").click()
    refusal = form.get_by_role("alert")
    expect(refusal).to_contain_text("idle_timeout")
    expect(refusal).to_contain_text(
        "must be a number of seconds, or a number followed by s, m, h or d"
    )
    assert all(b.name != "never started" for b in cluster.client.notebooks(all_=True))
    # Changing the form clears what was said about the last try.
    form.get_by_label("Idle timeout").fill("")
    expect(refusal).to_have_count(0)


def test_a_shell_started_from_the_page_shows_the_command_that_opens_it(
    cluster: Cluster, page: Any
) -> None:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    _open_page(cluster, page, "Shells")
    form = page.get_by_role("form", name="start a shell")
    assert form.get_by_label("Idle timeout").count() == 0
    form.get_by_label("Slots", exact=True).fill("0")
    form.get_by_label("Description").fill("shell from the page")
    form.get_by_role("button", name="Start shell").click()

    shell: rest.Shell = _started("shell", cluster.client.shells, "shell from the page")
    assert (shell.slots, shell.user) == (0, "admin")
    row = page.get_by_role("table", name="shells").get_by_role("row")
    row = row.filter(has_text="shell from the page")
    command = f"assay shell open {shell.id}"
    expect(row.get_by_text(command, exact=True)).to_be_visible()
    row.get_by_text("ready", exact=True).wait_for(timeout=STARTS)
    shot(page, "shells")
    row.get_by_role("button", name=f"copy {command}").click()
    expect(row.get_by_role("status")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == command

    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name=f"kill shell {shell.id}").click()
    expect(row).to_have_count(0, timeout=STARTS)
    ended = wait_for(
        "the shell to end", lambda: (s := cluster.client.shell(shell.id)).ended_at is not None and s
    )
    assert ended.state == "STOPPED"
