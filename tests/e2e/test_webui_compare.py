"""Looking across experiments and at curves more closely: experiments ticked on the list are
compared side by side (their best trials' curves on one chart, the settings their configs
differ in), and learning curves take a log scale and smoothing that live in the URL. The
cluster and the signed-in page are the session's (``conftest``)."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import shot
from tests.integration.cluster import Cluster

pytestmark = pytest.mark.integration


def _config(name: str, step_seconds: float) -> str:
    return yaml.safe_dump(
        {
            "name": name,
            "entrypoint": "python3 train.py",
            "hyperparameters": {"step_seconds": step_seconds, "checkpoint_every": 5},
            "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 10}},
        }
    )


@pytest.fixture(scope="module")
def pair(cluster: Cluster) -> tuple[int, int]:
    first = cluster.submit(_config("compared-a", 0.01))
    second = cluster.submit(_config("compared-b", 0.02))
    for exp_id in (first, second):
        cluster.wait_state(exp_id, "COMPLETED")
    return first, second


def test_experiments_ticked_on_the_list_are_compared_side_by_side(
    cluster: Cluster, pair: tuple[int, int], page: Any
) -> None:
    first, second = pair
    page.goto(f"{cluster.url}/experiments")
    page.get_by_label(f"compare experiment {first}").check()
    page.get_by_label(f"compare experiment {second}").check()
    page.get_by_role("link", name="Compare 2").click()
    page.wait_for_url(re.compile(rf"/compare\?ids={first},{second}$"))
    table = page.get_by_role("table", name="experiments compared")
    table.get_by_role("link", name=f"{first}: compared-a").wait_for()
    table.get_by_role("link", name=f"{second}: compared-b").wait_for()
    page.locator(".chart canvas").first.wait_for()
    differences = page.get_by_role("table", name="config differences")
    rows = {
        row.locator("th").inner_text(): row.locator("td").all_inner_texts()
        for row in differences.locator("tbody tr").all()
    }
    assert rows["name"] == ['"compared-a"', '"compared-b"']
    # A constant hyperparameter's effective form is {type: const, val: ...}.
    [step] = [values for key, values in rows.items() if key.startswith("hyperparameters.step")]
    assert step == ["0.01", "0.02"]
    assert "searcher.metric" not in rows
    assert page.title() == f"Compare {first}, {second} · assay"
    shot(page, "compare")


def test_learning_curves_take_a_log_scale_and_smoothing_kept_in_the_url(
    cluster: Cluster, pair: tuple[int, int], page: Any
) -> None:
    first, _ = pair
    page.goto(f"{cluster.url}/experiments/{first}")
    page.get_by_label("Log scale").click()  # checked once the URL changes
    page.wait_for_url(re.compile(r"log=1"))
    page.get_by_label("Smoothing").fill("0.6")
    page.wait_for_url(re.compile(r"smooth=0\.6"))
    page.locator(".chart canvas").first.wait_for()
    # The choices come back with the address.
    page.reload()
    assert page.get_by_label("Log scale").is_checked()
    assert page.get_by_label("Smoothing").input_value() == "0.6"


def test_an_experiment_shows_its_optimization_history_and_the_distribution_of_results(
    cluster: Cluster, pair: tuple[int, int], page: Any
) -> None:
    first, _ = pair
    page.goto(f"{cluster.url}/experiments/{first}")
    page.get_by_label("chart: Optimization history").locator("canvas").wait_for()
    page.get_by_label("chart: Distribution of results (EDF)").locator("canvas").wait_for()


def test_the_trials_table_hides_the_columns_unticked_in_its_picker(
    cluster: Cluster, pair: tuple[int, int], page: Any
) -> None:
    first, _ = pair
    page.goto(f"{cluster.url}/experiments/{first}")
    table = page.get_by_role("table", name="trials")
    table.get_by_role("columnheader", name=re.compile("^Restarts")).wait_for()
    page.get_by_text("Columns", exact=True).click()
    page.get_by_role("group", name="Columns shown").get_by_label("Restarts").click()
    page.wait_for_url(re.compile(r"hide=restarts"))
    assert table.get_by_role("columnheader", name=re.compile("^Restarts")).count() == 0
    page.reload()
    table.get_by_role("columnheader", name=re.compile("^Steps")).wait_for()
    assert table.get_by_role("columnheader", name=re.compile("^Restarts")).count() == 0


def test_a_trials_page_links_its_sections_and_the_plots_say_what_their_colours_mean(
    cluster: Cluster, pair: tuple[int, int], page: Any
) -> None:
    first, _ = pair
    page.goto(f"{cluster.url}/experiments/{first}")
    page.get_by_text(re.compile(r"coloured by the rank of its loss")).wait_for()
    trial = cluster.client.trials(first)[0]
    page.goto(f"{cluster.url}/trials/{trial.id}")
    page.get_by_role("navigation", name="sections").get_by_role("link", name="Logs").click()
    page.wait_for_url(re.compile(r"#logs$"))
    # Scrolled to (as far as the page's length allows): the heading is in the window.
    in_view = "() => { const r = document.getElementById('logs').getBoundingClientRect();"
    in_view += " return r.top >= 0 && r.bottom <= window.innerHeight; }"
    assert page.evaluate(in_view)
