"""The web UI with what a person may type into the address bar, and with answers other than the
happy ones: a page for something that is not there stops asking for its events, an id that is
not a number is said to be one without asking the API, and filters the URL gets wrong are read
leniently. The cluster and the signed-in page are the session's (``conftest``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from tests.integration.cluster import Cluster

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def paused(cluster: Cluster) -> int:
    """An experiment created paused: it is listed, and needs no slots."""
    config = {
        "name": "webui-details",
        "entrypoint": "python3 train.py",
        "hyperparameters": {"step_seconds": 0.05},
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 10}},
    }
    return cluster.submit(yaml.safe_dump(config), activate=False)


@pytest.fixture
def api_paths(page: Any) -> Iterator[list[str]]:
    """The path and query of every API request the page makes while the test runs."""
    seen: list[str] = []

    def record(request: Any) -> None:
        url = urlsplit(request.url)
        if url.path.startswith("/api/"):
            seen.append(url.path + (f"?{url.query}" if url.query else ""))

    page.on("request", record)
    yield seen
    page.remove_listener("request", record)


@pytest.mark.parametrize(
    ("path", "said"),
    [
        ("/experiments/abc", "no experiment 'abc': an experiment id is a whole number"),
        ("/experiments/1e3", "no experiment '1e3': an experiment id is a whole number"),
        ("/trials/abc", "no trial 'abc': a trial id is a whole number"),
        ("/tasks/-1", "no job '-1': a job id is a whole number"),
    ],
)
def test_a_page_for_an_id_that_is_not_a_number_says_so_without_asking_the_api(
    cluster: Cluster, page: Any, api_paths: list[str], path: str, said: str
) -> None:
    # Away from the page it was on first: what that page still asks is not this one's.
    page.goto("about:blank")
    api_paths.clear()
    page.goto(cluster.url + path)
    page.get_by_role("alert").filter(has_text=said).wait_for()
    # The header's own read of who is signed in aside, nothing asks about the id.
    assert [p for p in api_paths if p != "/api/v1/me"] == []


def test_a_missing_experiment_stops_asking_for_its_events(cluster: Cluster, page: Any) -> None:
    # A browser of its own, signed in as the page is, with a clock the test moves: a minute
    # passes for the page's timers at once, as many retries as the old second-long one made.
    context = page.context.browser.new_context(storage_state=page.context.storage_state())
    try:
        tab = context.new_page()
        tab.set_default_timeout(30_000)
        tab.clock.install()
        streams: list[str] = []

        def record(request: Any) -> None:
            if "/api/v1/events" in request.url:
                streams.append(request.url)

        tab.on("request", record)
        with tab.expect_response(lambda r: "/api/v1/events" in r.url) as first:
            tab.goto(f"{cluster.url}/experiments/999999")
        assert first.value.status == 404
        tab.get_by_role("alert").filter(has_text="999999").wait_for()
        tab.clock.run_for(60_000)
        # A request made after any retry the timers started: its answer comes after theirs left.
        assert tab.evaluate("() => fetch('/api/v1/experiments/999999').then(r => r.status)") in (
            401,
            404,
        )
        assert len(streams) == 1, streams
    finally:
        context.close()


def test_state_filters_in_any_case_are_read_and_unknown_ones_dropped(
    cluster: Cluster, paused: int, page: Any, api_paths: list[str]
) -> None:
    page.goto(f"{cluster.url}/experiments?state=paused&state=bogus")
    table = page.get_by_role("table", name="experiments")
    table.get_by_role("link", name="webui-details").first.wait_for()
    states = page.get_by_role("group", name="State")
    ticked = states.get_by_role("checkbox").evaluate_all(
        "boxes => boxes.filter(b => b.checked).map(b => b.parentElement.textContent)"
    )
    assert ticked == ["PAUSED"]
    assert page.get_by_role("alert").count() == 0
    listed = [p for p in api_paths if p.startswith("/api/v1/experiments?")]
    assert listed and all("state=PAUSED" in p and "bogus" not in p for p in listed), listed


def test_an_offset_past_the_end_shows_the_last_page(
    cluster: Cluster, paused: int, page: Any
) -> None:
    page.goto(f"{cluster.url}/experiments?offset=100000")
    page.get_by_role("table", name="experiments").get_by_role(
        "link", name="webui-details"
    ).first.wait_for()
    # The last page: it ends at the total.
    page.locator(".pager").get_by_text(re.compile(r"^\d+\u2013(\d+) of \1$")).wait_for()
    assert "offset=100000" not in page.url


def test_the_default_sort_is_marked_and_the_whole_header_cell_sorts(
    cluster: Cluster, paused: int, page: Any
) -> None:
    page.goto(f"{cluster.url}/experiments")
    table = page.get_by_role("table", name="experiments")
    header = table.get_by_role("columnheader", name=re.compile(r"^ID"))
    header.get_by_text("▼").wait_for()
    # A click near the cell's right edge, away from the header's text, sorts too.
    box = header.bounding_box()
    page.mouse.click(box["x"] + box["width"] - 3, box["y"] + box["height"] / 2)
    page.wait_for_url(re.compile(r"sort=id$"))
    header.get_by_text("▲").wait_for()


def test_deleted_checkpoints_are_hidden_until_asked_for(cluster: Cluster, page: Any) -> None:
    # No slots: it runs beside whatever holds the agent's.
    config = {
        "name": "webui-checkpoints",
        "entrypoint": "python3 train.py",
        "resources": {"slots_per_trial": 0},
        "hyperparameters": {"step_seconds": 0.01, "checkpoint_every": 1},
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 3}},
    }
    exp_id = cluster.submit(yaml.safe_dump(config))
    assert cluster.wait_state(exp_id, "COMPLETED", "ERROR").state == "COMPLETED"
    # The experiment's checkpoint policy keeps its latest one and garbage-collects the rest.
    checkpoints = cluster.client.experiment_checkpoints(exp_id)
    if all(c.state != "DELETED" for c in checkpoints[:-1]):
        cluster.client.delete_checkpoints([checkpoints[0].uuid])
        checkpoints = cluster.client.experiment_checkpoints(exp_id)
    deleted = [c.uuid for c in checkpoints if c.state == "DELETED"]
    kept = [c.uuid for c in checkpoints if c.state != "DELETED"]
    assert deleted and kept
    page.goto(f"{cluster.url}/experiments/{exp_id}")
    table = page.get_by_role("table", name="checkpoints")
    table.get_by_text(kept[0]).wait_for()
    assert table.get_by_text("DELETED", exact=True).count() == 0
    page.get_by_label("Show deleted").check()
    for uuid in deleted:
        table.get_by_text(uuid).wait_for()
    assert table.get_by_text("DELETED", exact=True).count() >= len(deleted)


# Each request for the event stream, with the page's (fake) time it was made and answered.
RECORD_STREAMS = """(() => {
    const fetchOf = window.fetch;
    window.__streams = [];
    window.fetch = function (input, init) {
        const answer = fetchOf.call(this, input, init);
        if (String(input instanceof Request ? input.url : input).includes('/api/v1/events')) {
            const seen = { asked: Date.now(), answered: null };
            window.__streams.push(seen);
            const done = () => { seen.answered = Date.now(); };
            answer.then(done, done);
        }
        return answer;
    };
})();"""


def test_an_event_stream_the_master_cannot_serve_is_asked_again_less_often(
    cluster: Cluster, page: Any
) -> None:
    context = page.context.browser.new_context(storage_state=page.context.storage_state())
    try:
        tab = context.new_page()
        tab.set_default_timeout(30_000)
        # The page's clock stands still but when the test moves it, a quarter second a step.
        tab.clock.install()
        tab.clock.pause_at(datetime.now() + timedelta(seconds=1))
        tab.add_init_script(RECORD_STREAMS)
        tab.route("**/api/v1/events**", lambda route: route.fulfill(status=503, body="down"))
        tab.goto(f"{cluster.url}/experiments")
        tab.get_by_role("heading", name="Experiments").wait_for()
        streams: list[dict[str, float | None]] = []
        for _ in range(200):
            streams = tab.evaluate("() => window.__streams")
            if len(streams) >= 5 and streams[-1]["answered"] is not None:
                break
            tab.clock.run_for(250)
        # After each refusal the next try waits 1 s, then twice as long each time, to 4 s.
        gaps = [
            float(after["asked"] or 0) - float(before["answered"] or 0)
            for before, after in pairwise(streams)
        ]
        assert len(gaps) >= 4, streams
        for gap, wait in zip(gaps, [1000, 2000, 4000, 4000], strict=False):
            assert wait <= gap < wait + 250, gaps
    finally:
        context.close()


def test_an_experiment_whose_trials_all_failed_says_none_completed_not_all_done(
    cluster: Cluster, page: Any
) -> None:
    config = {
        "name": "webui-all-failed",
        "entrypoint": "exit 3",
        "max_restarts": 0,
        "searcher": {"name": "random", "metric": "loss", "max_trials": 2,
                     "max_length": {"batches": 10}},
        "hyperparameters": {"x": {"type": "double", "minval": 0, "maxval": 1}},
    }  # fmt: skip
    failed = cluster.submit(yaml.safe_dump(config))
    assert cluster.wait_state(failed, "ERROR", "COMPLETED").state == "ERROR"
    # Its searcher has nothing left to do, but it did none of it: not "progress 100%".
    page.goto(f"{cluster.url}/experiments/{failed}")
    page.get_by_text("progress 0 of 2 trials completed", exact=True).wait_for()
    page.goto(f"{cluster.url}/experiments?name=webui-all-failed")
    page.get_by_label("progress: 0 of 2 trials completed").wait_for()
