"""Every page at a narrow window (800 px) and a wide one (1920 px): the page keeps to the
window's width (a wide table scrolls inside its own box, the page never sideways) and each
page's actions are in view. With ``ASSAY_WEBUI_SCREENSHOTS`` each is saved at both widths. The
cluster and the signed-in page are the session's (``conftest``)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.e2e.conftest import shot
from tests.integration.cluster import Cluster

pytestmark = pytest.mark.integration

PAGES = {
    "experiments": "/experiments",
    "experiment": "/experiments/{exp}",
    "trial": "/trials/{trial}",
    "job-queue": "/jobs",
    "jobs": "/tasks",
    "cluster": "/cluster",
    "submit": "/submit",
    "models": "/models",
    "account": "/account",
    "notebooks": "/notebooks",
    "shells": "/shells",
}


@pytest.fixture(scope="module")
def ended(cluster: Cluster) -> tuple[int, int]:
    config = {
        "name": "at-two-widths",
        "entrypoint": "python3 train.py",
        "hyperparameters": {"step_seconds": 0.01, "checkpoint_every": 5},
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 10}},
    }
    exp_id = cluster.submit(yaml.safe_dump(config))
    cluster.wait_state(exp_id, "COMPLETED")
    return exp_id, cluster.client.trials(exp_id)[0].id


@pytest.mark.parametrize("width", [800, 1920])
@pytest.mark.parametrize("name", list(PAGES))
def test_each_page_keeps_to_the_windows_width(
    cluster: Cluster, ended: tuple[int, int], page: Any, name: str, width: int
) -> None:
    exp_id, trial_id = ended
    page.set_viewport_size({"width": width, "height": 900})
    try:
        page.goto(cluster.url + PAGES[name].format(exp=exp_id, trial=trial_id))
        page.get_by_role("heading", level=1).first.wait_for()
        # Its reads answered (the event stream stays open, so the network is never idle).
        page.wait_for_function("() => !document.body.innerText.includes('Loading…')")
        overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{name} at {width} px is {overflow} px wider than the window"
        if name == "experiments":
            # Its row actions are in view without scrolling sideways.
            archive = page.get_by_role("button", name=f"archive experiment {exp_id}")
            box = archive.bounding_box()
            assert box is not None and box["x"] + box["width"] <= width
        shot(page, f"{name}-{width}")
    finally:
        page.set_viewport_size({"width": 1400, "height": 1000})
