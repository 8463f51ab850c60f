"""A page open while its master goes away and comes back: it says the master is not answering
(instead of showing the last state it read as if it were current), and once the master is back
it says so no more and shows what the master says now. A cluster of its own: its master is
killed and started again."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
import yaml

from tests.e2e.conftest import need_ui, signed_in_page
from tests.integration.cluster import Cluster, serve

pytestmark = pytest.mark.integration

LOST = "The master is not answering"


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Cluster]:
    need_ui()
    c = Cluster(tmp_path_factory.mktemp("master-lost") / "home")
    c.start_master()
    yield from serve(c, request)


def test_a_page_says_when_the_master_is_lost_and_catches_up_when_it_is_back(
    cluster: Cluster,
) -> None:
    config = {
        "name": "outlived",
        "entrypoint": "python3 train.py",
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 10}},
    }
    exp_id = cluster.submit(yaml.safe_dump(config), activate=False)
    with signed_in_page(cluster) as page:
        page.goto(f"{cluster.url}/experiments/{exp_id}")
        page.get_by_role("heading", name=re.compile("PAUSED")).wait_for()
        assert page.title() == f"Experiment {exp_id} · assay"
        cluster.kill_master()
        page.get_by_role("alert").filter(has_text=LOST).wait_for()

        cluster.start_master()
        # A change made while the page was away from it, seen once the page is back.
        cluster.client.transition(exp_id, "kill")
        ended = cluster.wait_state(exp_id, "CANCELED", "ERROR", "COMPLETED").state
        page.get_by_role("alert").filter(has_text=LOST).wait_for(state="detached", timeout=20_000)
        page.get_by_role("heading", name=re.compile(ended)).wait_for(timeout=20_000)
