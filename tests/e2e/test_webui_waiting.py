"""A trial its ASHA searcher holds for promotion shows as WAITING with its rung in the web UI's
trials table and on its trial page, never as a user's PAUSED."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import shot
from tests.integration.cluster import Cluster, serve, wait_for
from tests.integration.test_trial_waiting import CONFIG


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Cluster]:
    """A cluster of this module's own, with two slots: two of the search's four trials run at a
    time, so the rung is still open (later trials to come) when the first results are in and the
    trials not promoted wait rather than being closed. On the session's shared cluster, slots
    that other tests' experiments hold could keep them from ever reaching the rung."""
    c = Cluster(tmp_path_factory.mktemp("webui-waiting") / "home")
    c.start_master()
    c.start_agent("agent-1", slots=2)
    yield from serve(c, request)


def test_a_trial_waiting_for_promotion_shows_waiting_at_its_rung(
    cluster: Cluster, page: Any
) -> None:
    exp_id = cluster.submit(CONFIG)
    try:
        trial = wait_for(
            "a trial waiting at rung 1",
            lambda: next((t for t in cluster.client.trials(exp_id) if t.state == "WAITING"), None),
            timeout=120,
        )
        page.goto(f"{cluster.url}/experiments/{exp_id}")
        row = (
            page.get_by_role("table", name="trials")
            .get_by_role("row")
            .filter(has=page.get_by_role("link", name=str(trial.id), exact=True))
        )
        row.get_by_text("WAITING", exact=True).wait_for()
        row.get_by_text("rung 1 of 2", exact=True).wait_for()
        assert row.get_by_text("PAUSED").count() == 0
        shot(page, "experiment-trial-waiting")

        page.goto(f"{cluster.url}/trials/{trial.id}")
        heading = page.get_by_role("heading", name=f"Trial {trial.id}")
        heading.get_by_text("WAITING", exact=True).wait_for()
        heading.get_by_text("rung 1 of 2", exact=True).wait_for()
    finally:
        cluster.client.transition(exp_id, "kill")
        cluster.wait_state(exp_id, "CANCELED")
