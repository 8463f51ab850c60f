"""The web UI in a real browser (Debian's Chromium) against a real master and agent running a
real experiment: each page shows what the API has, and an action taken in the UI is what the
API reports afterwards.

With ``ASSAY_WEBUI_SCREENSHOTS=DIR`` each page's screenshot is saved in DIR (the README's
pictures in docs/screenshots/ are made so). The cluster and the signed-in page are the
session's (``conftest``), shared with the other modules here."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from playwright.sync_api import expect

from assay import rest
from assay.api._webui import DIST
from tests.e2e.conftest import shot
from tests.integration.cluster import Cluster, wait_for

pytestmark = pytest.mark.integration


def experiment_config() -> str:
    # Long enough to still be training when the last test pauses it.
    return yaml.safe_dump(
        {
            "name": "webui-counter",
            "entrypoint": "python3 train.py",
            "labels": ["webui"],
            "hyperparameters": {
                "step_seconds": 0.05,
                "checkpoint_every": 50,
                "x": {"type": "double", "minval": 1, "maxval": 2},
            },
            "searcher": {
                "name": "random",
                "metric": "loss",
                "max_trials": 2,
                "max_length": {"batches": 4000},
            },
        }
    )


@pytest.fixture(scope="module")
def experiment(cluster: Cluster) -> int:
    exp_id = cluster.submit(experiment_config())
    wait_for(
        "both trials to report training metrics",
        lambda: (
            (trials := cluster.client.trials(exp_id))
            and len(trials) == 2
            and all(t.latest_training is not None for t in trials)
        ),
    )
    return exp_id


def test_the_experiments_page_lists_the_running_experiment(
    cluster: Cluster, experiment: int, page: Any
) -> None:
    page.goto(f"{cluster.url}/experiments")
    table = page.get_by_role("table", name="experiments")
    row = table.get_by_role("row").filter(has_text="webui-counter")
    row.get_by_text("ACTIVE").wait_for()
    assert row.get_by_role("link", name=str(experiment)).count() == 1
    assert row.get_by_role("cell", name="admin").count() == 1
    shot(page, "experiments")


def test_a_filter_lives_in_the_url_and_hides_what_it_excludes(
    cluster: Cluster, experiment: int, page: Any
) -> None:
    page.goto(f"{cluster.url}/experiments?state=COMPLETED")
    table = page.get_by_role("table", name="experiments")
    table.get_by_text("No experiments match.").wait_for()
    page.goto(f"{cluster.url}/experiments?name=webui&label=webui")
    table.get_by_role("link", name="webui-counter").wait_for()


def test_the_experiment_page_shows_its_trials_hparams_and_a_learning_curve(
    cluster: Cluster, experiment: int, page: Any
) -> None:
    trials = cluster.client.trials(experiment)
    page.goto(f"{cluster.url}/experiments/{experiment}")
    table = page.get_by_role("table", name="trials")
    for trial in trials:
        table.get_by_role("link", name=str(trial.id), exact=True).wait_for()
    # The hyperparameter is a column, with each trial's value in it.
    assert table.get_by_role("columnheader", name="x").count() == 1
    page.locator(".chart canvas").first.wait_for()
    assert "searcher:" in page.get_by_label("effective config").inner_text()
    shot(page, "experiment")
    # Another metric on a chart of its own below (both in the URL), and let go again.
    charts = page.locator(".chart")
    expect(charts).to_have_count(1)
    page.get_by_role("button", name="Add a metric").click()
    page.wait_for_url(re.compile(r"metric=[^&]+&metric="))
    expect(charts).to_have_count(2)
    second = page.get_by_role("combobox", name="Metric 2").input_value()
    assert second != page.get_by_role("combobox", name="Metric", exact=True).input_value()
    expect(page.get_by_label(f"chart: {second}")).to_have_count(1)
    page.get_by_role("button", name=f"remove {second}").click()
    expect(charts).to_have_count(1)
    # Time on the x-axis: when each point was reported, as dates and times.
    with page.expect_response(lambda r: "/metrics?" in r.url and "times=true" in r.url) as got:
        page.get_by_label("X-axis").select_option("time")
    assert all(s["times"] for s in got.value.json()["series"] if s["values"])
    page.wait_for_url(re.compile(r"x=time"))
    # (uPlot draws its ticks on the canvas; its legend names the x series.)
    expect(page.locator(".chart .u-legend").first).to_contain_text("time reported")


def test_the_trial_page_shows_its_hparams_metrics_and_logs(
    cluster: Cluster, experiment: int, page: Any
) -> None:
    trial = cluster.client.trials(experiment)[0]
    page.goto(f"{cluster.url}/trials/{trial.id}")
    logs = page.get_by_label("logs")
    # The counter prints this when it starts; the line comes from the master's logs.
    page.wait_for_function(
        "el => el.textContent.includes('started at step')", arg=logs.element_handle()
    )
    hparams = page.get_by_role("table", name="hyperparameters")
    assert hparams.get_by_role("row").filter(has_text="step_seconds").count() == 1
    page.locator(".chart canvas").first.wait_for()
    shot(page, "trial")


def test_the_job_queue_shows_the_experiment_and_its_manage_dialog(
    cluster: Cluster, experiment: int, page: Any
) -> None:
    page.goto(f"{cluster.url}/jobs")
    table = page.get_by_role("table", name="job queue")
    table.get_by_text("webui-counter").wait_for()
    table.get_by_role("button", name="manage job webui-counter").click()
    dialog = page.get_by_role("dialog", name="Manage Job")
    dialog.wait_for()
    # The default pool uses the priority scheduler: weight is shown, but disabled.
    assert dialog.get_by_label("Weight").is_disabled()
    assert dialog.get_by_label("Priority").is_enabled()
    shot(page, "job-queue")
    dialog.get_by_role("button", name="Cancel").click()


def test_the_cluster_page_shows_the_pool_and_the_agent_with_its_slots(
    cluster: Cluster, page: Any
) -> None:
    page.goto(f"{cluster.url}/cluster")
    pools = page.get_by_role("table", name="resource pools")
    pools.get_by_role("cell", name="default", exact=True).wait_for()
    agents = page.get_by_role("table", name="agents")
    agents.get_by_role("cell", name="agent-1", exact=True).wait_for()
    shot(page, "cluster")


def test_pausing_from_the_ui_pauses_the_experiment_in_the_api(
    cluster: Cluster, experiment: int, page: Any
) -> None:
    page.goto(f"{cluster.url}/experiments/{experiment}")
    pause = page.get_by_role("button", name=f"pause experiment {experiment}")
    # Reached by keyboard, as every action is.
    pause.focus()
    page.keyboard.press("Enter")
    assert cluster.wait_state(experiment, "PAUSED").state == "PAUSED"
    # The page catches up without a reload, offering Activate instead.
    page.get_by_role("button", name=f"activate experiment {experiment}").wait_for()

    # A paused trial's time stops where its run ended: the table and its own page say the
    # same, and neither counts on.
    def all_paused() -> rest.Trial | None:
        trials = cluster.client.trials(experiment)
        return trials[0] if all(t.state == "PAUSED" for t in trials) else None

    trial = wait_for("its trials to be paused", all_paused)
    page.reload()
    table = page.get_by_role("table", name="trials")
    row = table.get_by_role("row").filter(
        has=page.get_by_role("link", name=str(trial.id), exact=True)
    )
    row.wait_for()
    headers = table.get_by_role("columnheader").all_inner_texts()
    cell = row.get_by_role("cell").nth(next(i for i, h in enumerate(headers) if "Duration" in h))
    shown = cell.inner_text()
    page.wait_for_timeout(2500)
    assert cell.inner_text() == shown, "a paused trial's duration went on"
    page.goto(f"{cluster.url}/trials/{trial.id}")
    page.get_by_text(f"duration {shown}", exact=True).wait_for()


def test_a_change_made_elsewhere_reaches_the_open_pages_through_the_event_stream(
    cluster: Cluster, experiment: int, page: Any
) -> None:
    # The pages do not poll experiments: only the master's event stream can tell them.
    page.goto(f"{cluster.url}/experiments/{experiment}")
    page.get_by_role("button", name=f"activate experiment {experiment}").wait_for()
    cluster.client.transition(experiment, "activate")
    page.get_by_role("button", name=f"pause experiment {experiment}").wait_for()
    page.goto(f"{cluster.url}/experiments?label=webui")
    page.get_by_role("button", name=f"pause experiment {experiment}").wait_for()
    cluster.client.transition(experiment, "pause")
    page.get_by_role("button", name=f"activate experiment {experiment}").wait_for()


def test_an_open_trial_page_shows_new_log_lines_and_steps_as_they_come(
    cluster: Cluster, experiment: int, page: Any
) -> None:
    trial = cluster.client.trials(experiment)[0]
    page.goto(f"{cluster.url}/trials/{trial.id}")
    logs = page.get_by_label("logs")
    page.wait_for_function("el => el.textContent.includes('run 1 ')", arg=logs.element_handle())
    steps_before = cluster.client.trials(experiment)[0].steps_completed
    cluster.client.transition(experiment, "activate")
    try:
        # The resumed run's first line and its new steps arrive without a reload.
        page.wait_for_function("el => el.textContent.includes('run 2 ')", arg=logs.element_handle())
        page.wait_for_function(
            """before => {
                const m = document.body.innerText.match(/steps (\\d+)/);
                return m !== null && Number(m[1]) > before;
            }""",
            arg=steps_before,
        )
    finally:
        cluster.client.transition(experiment, "pause")
        cluster.wait_state(experiment, "PAUSED")


KEYBOARD_PAGES = [
    "/experiments",
    "/experiments/{exp}",
    "/trials/{trial}",
    "/jobs",
    "/cluster",
    "/submit",
    "/notebooks",
    "/shells",
    "/models",
    "/account",
    "/tasks",
]


@pytest.mark.parametrize("path", KEYBOARD_PAGES)
def test_keyboard_alone_reaches_every_action_of_each_page(
    cluster: Cluster, experiment: int, page: Any, path: str
) -> None:
    trial = cluster.client.trials(experiment)[0].id
    page.goto(cluster.url + path.format(exp=experiment, trial=trial))
    # Loaded when nothing says "Loading…" and the number of controls stops changing between
    # two looks (the event stream keeps the network busy, so "network idle" never comes).
    page.wait_for_function(
        """() => {
            if (document.body.innerText.includes('Loading…')) return false;
            const n = document.querySelectorAll('button, a[href], input, select').length;
            const settled = n === window.__controls;
            window.__controls = n;
            return settled;
        }""",
        polling=500,
    )
    # Each control is told apart by its tag, its label or name, and its text: a live page may
    # re-render a control (a new class, a value) while the keyboard walks it.
    describe = """e => [e.tagName, e.getAttribute('aria-label') ?? e.getAttribute('name') ?? '',
        e.getAttribute('href') ?? '', (e.textContent ?? '').trim().slice(0, 40)].join('|')"""
    wanted = set(
        page.eval_on_selector_all(
            "button:not([disabled]), a[href], input:not([disabled]), select:not([disabled]), "
            "textarea:not([disabled])",
            f"els => els.filter(e => e.offsetParent !== null).map({describe})",
        )
    )
    assert wanted, "the page shows no controls"
    reached: set[str] = set()
    page.locator("body").focus()
    for _ in range(len(wanted) * 2 + 10):
        page.keyboard.press("Tab")
        reached.add(page.evaluate(f"({describe})(document.activeElement)"))
        if wanted <= reached:
            break
    assert wanted <= reached, sorted(wanted - reached)[:5]


def test_the_cluster_and_queue_pages_follow_agents_and_jobs_without_a_reload(
    cluster: Cluster, page: Any
) -> None:
    # Neither page polls: an agent joining or leaving, a job queued or ended reach them
    # through the event stream.
    page.goto(f"{cluster.url}/cluster")
    agents = page.get_by_role("table", name="agents")
    agents.get_by_role("cell", name="agent-1", exact=True).wait_for()
    cluster.start_agent("agent-ui", slots=1)
    agents.get_by_role("cell", name="agent-ui", exact=True).wait_for()
    leaving = cluster.agents.pop("agent-ui")
    leaving.terminate()
    leaving.wait(timeout=30)
    page.wait_for_function(
        """() => [...document.querySelectorAll('table[aria-label="agents"] tr')].some(
            r => r.cells[0]?.textContent === 'agent-ui' && r.cells[2]?.textContent === 'no')"""
    )

    config = {**yaml.safe_load(experiment_config()), "resources": {"slots_per_trial": 16}}
    # Submitted once the page follows the queue's stream: a job queued before that, and after
    # the page read the queue, would reach it by neither.
    with page.expect_response(lambda r: "/api/v1/events" in r.url and "queue=true" in r.url):
        page.goto(f"{cluster.url}/jobs")
    table = page.get_by_role("table", name="job queue")
    table.wait_for()
    page.get_by_role("tab", name="default").wait_for()
    exp_id = cluster.submit(yaml.safe_dump({**config, "name": "queue-live"}))
    table.get_by_text("queue-live").wait_for()
    cluster.client.transition(exp_id, "kill")
    table.get_by_text("queue-live").wait_for(state="detached")


def test_job_priority_move_ahead_and_move_to_top_change_the_queue_as_the_cli_sees_it(
    cluster: Cluster, page: Any
) -> None:
    # More slots than the cluster has: both wait in the queue, where jobs can be reordered.
    config = {**yaml.safe_load(experiment_config()), "resources": {"slots_per_trial": 16}}
    first = cluster.submit(yaml.safe_dump({**config, "name": "queue-a"}))
    second = cluster.submit(yaml.safe_dump({**config, "name": "queue-b"}))

    def queue() -> list[dict[str, Any]]:
        listed = json.loads(cluster.cli("job", "list", "--json", check=True).stdout)
        jobs: list[dict[str, Any]] = listed["jobs"] if isinstance(listed, dict) else listed
        return [j for j in jobs if j.get("experiment_id") in (first, second)]

    def order() -> list[int]:
        return [j["experiment_id"] for j in queue()]

    assert order() == [first, second]
    page.goto(f"{cluster.url}/jobs")
    table = page.get_by_role("table", name="job queue")
    # Each waiting job says why, as `assay job list` does.
    waits = next(j for j in queue() if j["experiment_id"] == first)["waiting"]
    assert waits
    table.get_by_role("row").filter(has_text="queue-a").get_by_role("cell", name=waits).wait_for()
    table.get_by_role("button", name="manage job queue-b").click()
    dialog = page.get_by_role("dialog", name="Manage Job")
    dialog.get_by_label("Priority").fill("30")
    dialog.get_by_role("button", name="OK").click()
    dialog.wait_for(state="hidden")
    wait_for(
        "queue-b's priority to be 30",
        lambda: next(j for j in queue() if j["experiment_id"] == second)["priority"] == 30,
    )
    table.get_by_role("button", name="manage job queue-b").click()
    job_a = next(j["id"] for j in queue() if j["experiment_id"] == first)
    dialog.get_by_label("place").select_option("ahead_of")
    dialog.get_by_label("other job").select_option(value=job_a)
    dialog.get_by_role("button", name="OK").click()
    dialog.wait_for(state="hidden")
    wait_for("queue-b to move ahead of queue-a", lambda: order() == [second, first])
    table.get_by_role("button", name="manage job queue-a").click()
    page.get_by_role("dialog", name="Manage Job").get_by_role("button", name="Move to Top").click()
    wait_for("queue-a to go to the top", lambda: order() == [first, second])
    for exp_id in (first, second):
        cluster.client.transition(exp_id, "kill")


def test_archiving_an_ended_experiment_from_the_ui_archives_it_in_the_api(
    cluster: Cluster, page: Any
) -> None:
    exp_id = cluster.submit(experiment_config(), activate=False)
    cluster.client.transition(exp_id, "kill")
    cluster.wait_state(exp_id, "CANCELED", "KILLED", "COMPLETED", "ERROR")
    page.goto(f"{cluster.url}/experiments/{exp_id}")
    page.get_by_role("button", name=f"archive experiment {exp_id}").click()
    wait_for("the experiment to be archived", lambda: cluster.client.experiment(exp_id).archived)
    page.get_by_role("button", name=f"unarchive experiment {exp_id}").wait_for()


def test_the_link_assay_up_prints_signs_a_new_browser_in_once(cluster: Cluster, page: Any) -> None:
    answer = httpx.post(
        f"{cluster.url}/api/v1/auth/one-time-tokens", headers=cluster.auth_headers()
    )
    assert answer.status_code == 201, answer.text
    link = f"{cluster.url}/experiments#token={answer.json()['token']}"
    # New browser contexts: no sign-in stored, as on a first visit.
    first = page.context.browser.new_context()
    second = page.context.browser.new_context()
    try:
        tab = first.new_page()
        tab.set_default_timeout(30_000)
        tab.goto(link)
        tab.get_by_role("button", name="Sign out").wait_for()
        tab.get_by_role("heading", name="Experiments").wait_for()
        assert "token=" not in tab.url  # taken out of the address bar and history
        other = second.new_page()  # the spent link signs no one else in
        other.set_default_timeout(30_000)
        other.goto(link)
        other.wait_for_url(lambda url: "/sign-in" in url)
        # It says why, and where the admin's password of an `assay up` cluster is.
        other.get_by_role("status").filter(has_text="already used or has expired").wait_for()
        assert "admin-password" in other.locator("main").inner_text()
    finally:
        first.close()
        second.close()


def asha_config() -> str:
    config: dict[str, Any] = {
        "name": "webui-asha",
        "entrypoint": "python3 train.py",
        "hyperparameters": {
            "step_seconds": 0.001,
            "checkpoint_every": 1000,
            "x": {"type": "double", "minval": 1, "maxval": 10},
            "opt": {"type": "categorical", "vals": ["sgd", "adam"]},
            "lr": {"type": "log", "minval": -4, "maxval": -1},
        },
        "searcher": {
            "name": "async_halving",
            "metric": "loss",
            "num_rungs": 2,
            "divisor": 2,
            "max_trials": 4,
            "stop_once": True,
            "max_length": {"batches": 4},
        },
        "max_restarts": 0,
    }
    return yaml.safe_dump(config)


@pytest.fixture(scope="module")
def analysed(cluster: Cluster) -> int:
    """A finished ASHA search (rungs at 2 and 4 batches, stop_once) over a double, a
    categorical and a log hyperparameter, on an agent of its own (the first one's slots are
    the long experiment's)."""
    cluster.start_agent("agent-2", slots=4)
    exp_id = cluster.submit(asha_config())
    assert cluster.wait_state(exp_id, "COMPLETED", "ERROR").state == "COMPLETED"
    return exp_id


def test_the_experiment_page_shows_the_rungs_importance_and_hyperparameter_plots(
    cluster: Cluster, analysed: int, page: Any
) -> None:
    progress = cluster.client.searcher_progress(analysed)
    importance = cluster.client.hparam_importance(analysed)
    page.goto(f"{cluster.url}/experiments/{analysed}?hp=lr")
    (bracket,) = progress.brackets
    rungs = page.get_by_role("table", name="rungs of bracket 1")
    rungs.wait_for()
    rows = rungs.get_by_role("row")
    for index, rung in enumerate(bracket.rungs):
        cells = rows.nth(index + 1).get_by_role("cell").all_inner_texts()
        assert cells[1:5] == [str(rung.length), str(rung.reached), "0", str(rung.promoted)]
    assert "trials created 4 of 4" in page.get_by_label("searcher progress").inner_text()
    # Importance: one bar per hyperparameter the API ranks, in its order.
    chart = page.get_by_role("img", name="hyperparameter importance")
    chart.wait_for()
    names = chart.locator(".importance-name").all_text_contents()
    assert names == [i.name for i in importance.importances]
    # Parallel coordinates: an axis per searched hyperparameter (not the constants), then the
    # metric; a line per trial. Axes go in the order the API's config has the hyperparameters.
    space = cluster.client.experiment(analysed).config["hyperparameters"]
    axes = [name for name in space if name in {"x", "opt", "lr"}] + ["loss"]
    label = f"parallel coordinates of 4 trials over {', '.join(axes)}"
    page.get_by_role("img", name=label).wait_for()
    assert page.locator(".pc-axis-name").all_inner_texts() == axes
    # Brushing: a drag along the metric's axis (the last, 70 px in from the right; the plot's
    # padding is 34 px at the top and 22 at the bottom) keeps the trials in that range.
    plot = page.get_by_role("img", name=label)
    plot.scroll_into_view_if_needed()  # the mouse acts on what is in the viewport
    box = plot.bounding_box()
    x, top = box["x"] + box["width"] - 70, box["y"] + 34
    span = box["height"] - 34 - 22

    def brush(start: float, end: float) -> None:  # positions on the axis: 1 top, 0 bottom
        page.mouse.move(x, top + (1 - start) * span)
        page.mouse.down()
        page.mouse.move(x, top + (1 - end) * span, steps=5)
        page.mouse.up()

    brushed = page.get_by_role("status", name="brushed trials")
    brush(1.05, -0.05)  # past both ends: the whole axis
    expect(brushed).to_contain_text("4 of 4 trials in the brushed ranges")
    page.get_by_role("img", name="loss brushed").wait_for()
    losses = [t.best_validation for t in cluster.client.trials(analysed)]
    lo, hi = min(losses), max(losses)
    share = [(v - lo) / (hi - lo) for v in losses]
    if all(abs(p - 0.6) > 0.05 for p in share):  # no trial on the edge the pixels draw
        brush(1.05, 0.6)
        expect(brushed).to_contain_text(f"{sum(p > 0.6 for p in share)} of 4 trials")
    brush(1.05, -0.05)
    # Linked to the trials table: its Plot boxes tick the brushed trials (the URL keeps them).
    brushed.get_by_role("button", name="Tick them in the trials table").click()
    page.wait_for_url(re.compile(r"trials=\d"))
    for trial in cluster.client.trials(analysed):
        expect(page.get_by_role("checkbox", name=f"plot trial {trial.id}")).to_be_checked()
    # A click on the axis lets its range go.
    page.mouse.click(x, top + span / 2)
    expect(brushed).to_have_count(0)
    # The scatter plots the hyperparameter the URL names; choosing another puts it there.
    page.get_by_role("img", name="loss against lr for 4 trials").wait_for()
    page.get_by_role("combobox", name="hyperparameter to plot").select_option("opt")
    page.get_by_role("img", name="loss against opt for 4 trials").wait_for()
    assert "hp=opt" in page.url
    # Two hyperparameters against each other, each trial coloured by its metric.
    searched = axes[:-1]
    pair = f"{searched[1]} against {searched[0]} for 4 trials, coloured by loss"
    page.get_by_role("img", name=pair).wait_for()
    page.get_by_role("combobox", name="hyperparameter up").select_option(searched[2])
    moved = f"{searched[2]} against {searched[0]} for 4 trials, coloured by loss"
    page.get_by_role("img", name=moved).wait_for()
    assert f"py={searched[2]}" in page.url
    shot(page, "experiment-analysis")


# Where on the scatter a point is drawn (CSS pixels in the canvas): a pixel of a point's fill,
# neither the white ground nor the axes' grey.
A_POINT = """el => {
    const canvas = el.querySelector('canvas');
    const ratio = canvas.width / canvas.clientWidth;
    const d = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    for (let i = 0; i < d.length; i += 4) {
        const [r, g, b, a] = [d[i], d[i + 1], d[i + 2], d[i + 3]];
        const grey = Math.abs(r - g) < 12 && Math.abs(g - b) < 12;
        if (a > 200 && !grey) {
            const at = i / 4;
            return {x: (at % canvas.width) / ratio, y: Math.floor(at / canvas.width) / ratio};
        }
    }
    return null;
}"""


def test_a_scatter_point_names_its_trial_on_hover_and_opens_it_on_click(
    cluster: Cluster, analysed: int, page: Any
) -> None:
    page.goto(f"{cluster.url}/experiments/{analysed}?hp=lr")
    plot = page.get_by_role("img", name="loss against lr for 4 trials")
    plot.wait_for()
    box = plot.locator("xpath=..")
    point = box.evaluate(A_POINT)
    assert point is not None
    # A little inside the point, whose first pixel found is its top edge.
    box.hover(position={"x": point["x"], "y": point["y"] + 2})
    tip = page.get_by_role("tooltip")
    tip.wait_for()
    trial_id = int(re.match(r"trial (\d+):", tip.inner_text()).group(1))  # type: ignore[union-attr]
    assert trial_id in {t.id for t in cluster.client.trials(analysed)}
    box.click(position={"x": point["x"], "y": point["y"] + 2})
    page.wait_for_url(re.compile(rf"/trials/{trial_id}$"))


def pixels_where(test: str) -> str:
    """A function of an element, for the page: how many pixels of its canvas pass ``test``, an
    expression of the pixel's ``r``, ``g``, ``b`` and ``a`` (0-255)."""
    return f"""el => {{
    const canvas = el.querySelector('canvas');
    if (!canvas) return 0;
    const d = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) {{
        const [r, g, b, a] = [d[i], d[i + 1], d[i + 2], d[i + 3]];
        if ({test}) n++;
    }}
    return n;
}}"""


def pixels_coloured(red: int, green: int, blue: int) -> str:
    """How many pixels of an element's canvas are (nearly) this colour, opaque."""
    return pixels_where(
        f"Math.abs(r - {red}) + Math.abs(g - {green}) + Math.abs(b - {blue}) < 30 && a > 200"
    )


# How many pixels of a plot's canvas are drawn in the dark of the trials ticked in the table.
DARK_PIXELS = pixels_coloured(17, 24, 39)


def test_trials_ticked_in_the_table_are_drawn_over_the_others_in_the_plots(
    cluster: Cluster, analysed: int, page: Any
) -> None:
    trial = cluster.client.trials(analysed)[0]
    page.goto(f"{cluster.url}/experiments/{analysed}")
    lines = page.get_by_role("img", name=re.compile("^parallel coordinates")).locator("xpath=..")
    lines.wait_for()
    assert lines.evaluate(DARK_PIXELS) == 0
    page.get_by_label(f"plot trial {trial.id}").click()  # checked once the URL changes
    page.wait_for_function(f"el => ({DARK_PIXELS})(el) > 0", arg=lines.element_handle())


def test_the_scatters_metric_goes_on_a_log_scale_when_asked(
    cluster: Cluster, analysed: int, page: Any
) -> None:
    page.goto(f"{cluster.url}/experiments/{analysed}?hp=lr")
    page.get_by_label("loss on a log scale").click()  # checked once the URL changes
    page.wait_for_url(re.compile(r"slog=1"))
    losses = [t.best_validation for t in cluster.client.trials(analysed)]
    if all(v is not None and v > 0 for v in losses):
        page.locator(".sc-axis-name.y").filter(has_text="loss (log)").wait_for()
    else:
        page.get_by_text("not every value is above zero").wait_for()


def drag_box(page: Any, plot: Any, start: tuple[float, float], end: tuple[float, float]) -> None:
    """Drag the mouse over ``plot`` from ``start`` to ``end``, each a share (0-1) of its width
    and height from its top-left corner."""
    plot.scroll_into_view_if_needed()  # the mouse acts on what is in the viewport
    box = plot.bounding_box()
    page.mouse.move(box["x"] + start[0] * box["width"], box["y"] + start[1] * box["height"])
    page.mouse.down()
    page.mouse.move(box["x"] + end[0] * box["width"], box["y"] + end[1] * box["height"], steps=5)
    page.mouse.up()


def test_a_box_dragged_over_the_scatter_keeps_its_trials_to_tick_in_the_table(
    cluster: Cluster, analysed: int, page: Any
) -> None:
    page.goto(f"{cluster.url}/experiments/{analysed}?hp=x")
    plot = page.get_by_role("img", name="loss against x for 4 trials")
    plot.wait_for()
    brushed = page.get_by_role("status", name="brushed trials")
    drag_box(page, plot, (0.01, 0.01), (0.99, 0.99))  # past the axes' ends: every trial
    expect(brushed).to_contain_text("4 of 4 trials in the box")
    page.get_by_role("img", name="dragged box").wait_for()
    assert re.search(rf"/experiments/{analysed}\?", page.url)  # a drag opens no trial
    # The left half of x's axis (70 px in from the left, 20 from the right) keeps the trials
    # whose x is in the lower half of the range drawn.
    trials = cluster.client.trials(analysed)
    xs = {t.id: t.hparams["x"] for t in trials}
    lo, hi = min(xs.values()), max(xs.values())
    width = plot.bounding_box()["width"]
    middle = (70 + 0.5 * (width - 90)) / width
    share = {i: (x - lo) / (hi - lo) for i, x in xs.items()}
    if all(abs(v - 0.5) > 0.05 for v in share.values()):  # none on the edge the pixels draw
        drag_box(page, plot, (0.01, 0.01), (middle, 0.99))
        left = sorted(i for i, v in share.items() if v < 0.5)
        expect(brushed).to_contain_text(f"{len(left)} of 4 trials in the box")
        if left:
            brushed.get_by_role("button", name="Tick them in the trials table").click()
            page.wait_for_url(re.compile(r"trials=\d"))
            for i in xs:
                ticked = expect(page.get_by_role("checkbox", name=f"plot trial {i}"))
                if i in left:
                    ticked.to_be_checked()
                else:
                    ticked.not_to_be_checked()
    brushed.get_by_role("button", name="Clear").click()
    expect(brushed).to_have_count(0)


# How many pixels of a canvas are drawn at all (any colour, not fully transparent).
DRAWN_PIXELS = pixels_where("a > 0")


def test_the_pair_plot_shades_the_metric_between_trials_and_keeps_a_dragged_box(
    cluster: Cluster, analysed: int, page: Any
) -> None:
    page.goto(f"{cluster.url}/experiments/{analysed}?px=x&py=lr")
    plot = page.get_by_role("img", name="lr against x for 4 trials, coloured by loss")
    plot.wait_for()
    frame = plot.locator("xpath=..")
    page.get_by_text("The shading estimates loss between the trials").wait_for()
    shaded = frame.evaluate(DRAWN_PIXELS)
    # Off: only the axes and four points are drawn, a small share of what the shading covers.
    page.get_by_label("Shade between trials").click()
    page.wait_for_url(re.compile(r"pshade=0"))
    expect(page.get_by_text("The shading estimates loss between the trials")).to_have_count(0)
    bare = frame.evaluate(DRAWN_PIXELS)
    assert shaded > 5 * bare, (shaded, bare)
    drag_box(page, plot, (0.01, 0.01), (0.99, 0.99))
    brushed = page.get_by_role("status", name="brushed trials")
    expect(brushed).to_contain_text("4 of 4 trials in the box")
    # Another pair lets the box go (it was drawn over these axes); Up never offers Across's.
    up = page.get_by_role("combobox", name="hyperparameter up")
    assert "x" not in up.locator("option").all_inner_texts()
    up.select_option("opt")
    expect(brushed).to_have_count(0)


# How many pixels of a chart's canvas are in its first series' colour (the palette's first,
# #1f77b4): a series with a single point draws no line, so only its marker can colour any.
FIRST_SERIES_PIXELS = pixels_coloured(31, 119, 180)


def test_a_validation_reported_once_shows_as_a_point_and_early_stops_are_marked(
    cluster: Cluster, analysed: int, page: Any
) -> None:
    # ASHA stopped the trials it did not promote after their one validation (at the first rung).
    def stopped_after_one_validation(exp_id: int) -> list[Any]:
        return [
            t
            for t in cluster.client.trials(exp_id)
            if t.early_stopped and len(cluster.client.metrics(t.id, "validation")) == 1
        ]

    exp_id, once = analysed, stopped_after_one_validation(analysed)
    for _ in range(5):
        if once:
            break
        # About one search in twelve keeps every trial (each result the best so far when it
        # came): search again.
        exp_id = cluster.submit(asha_config())
        assert cluster.wait_state(exp_id, "COMPLETED", "ERROR").state == "COMPLETED"
        once = stopped_after_one_validation(exp_id)
    assert once, "no trial of six ASHA searches was stopped after one validation"
    trial = once[0]
    page.goto(f"{cluster.url}/experiments/{exp_id}?trials={trial.id}")
    chart = page.get_by_label("chart: validation/loss")
    chart.locator("canvas").wait_for()
    page.wait_for_function(f"el => ({FIRST_SERIES_PIXELS})(el) > 0", arg=chart.element_handle())
    row = (
        page.get_by_role("table", name="trials")
        .get_by_role("row")
        .filter(has=page.get_by_role("link", name=str(trial.id), exact=True))
    )
    row.get_by_text("early stop").wait_for()

    page.goto(f"{cluster.url}/trials/{trial.id}")
    page.get_by_role("heading", name=f"Trial {trial.id}").get_by_text("early stop").wait_for()
    chart = page.get_by_label("chart: validation")
    chart.locator("canvas").wait_for()
    page.wait_for_function(f"el => ({FIRST_SERIES_PIXELS})(el) > 0", arg=chart.element_handle())
    shot(page, "trial-early-stopped")


def test_non_ids_in_the_trials_parameter_are_left_out(
    cluster: Cluster, experiment: int, page: Any
) -> None:
    trial = cluster.client.trials(experiment)[0]
    page.goto(f"{cluster.url}/experiments/{experiment}?trials=abc,{trial.id},1e3")
    page.get_by_text("1 selected trial(s)").wait_for()
    page.locator(".chart canvas").first.wait_for()
    assert page.get_by_role("alert").count() == 0


def test_a_metric_the_trials_never_reported_is_said_to_be_so(
    cluster: Cluster, experiment: int, page: Any
) -> None:
    page.goto(f"{cluster.url}/experiments/{experiment}?metric=validation/nonexistent")
    page.get_by_text("These trials reported no metric “validation/nonexistent”").wait_for()


def test_an_experiment_that_never_ran_has_no_duration_and_cancel_asks_first(
    cluster: Cluster, page: Any
) -> None:
    exp_id = cluster.submit(experiment_config(), activate=False)
    page.goto(f"{cluster.url}/experiments/{exp_id}")
    page.get_by_text("duration —").wait_for()
    asked: list[str] = []

    def answer(accept: bool) -> Any:
        def handle(dialog: Any) -> None:
            asked.append(dialog.message)
            if accept:
                dialog.accept()
            else:
                dialog.dismiss()

        return handle

    cancel = page.get_by_role("button", name=f"cancel experiment {exp_id}")
    page.once("dialog", answer(False))
    cancel.click()
    assert asked == [f"Cancel experiment {exp_id}?"]
    page.once("dialog", answer(True))
    cancel.click()
    cluster.wait_state(exp_id, "CANCELED")
    page.get_by_role("button", name=f"archive experiment {exp_id}").wait_for()
    assert cluster.client.experiment(exp_id).state == "CANCELED"
    page.get_by_text("duration —").wait_for()


def test_an_experiment_without_finished_trials_says_why_it_has_no_importance(
    cluster: Cluster, experiment: int, page: Any
) -> None:
    page.goto(f"{cluster.url}/experiments/{experiment}")
    page.get_by_role("status").filter(has_text="at least 2 finished trials").wait_for()


def test_a_client_side_route_loads_the_ui_and_an_unknown_api_path_stays_a_404(
    cluster: Cluster,
) -> None:
    deep = httpx.get(f"{cluster.url}/trials/12345")
    assert deep.status_code == 200 and '<div id="root">' in deep.text
    assert deep.headers["cache-control"] == "no-cache"
    missing = httpx.get(f"{cluster.url}/api/v1/no-such-thing")
    assert missing.status_code == 404 and missing.json()["error"]["type"]
    asset = next((DIST / "assets").glob("*.js")).name
    cached = httpx.get(f"{cluster.url}/assets/{asset}")
    assert cached.status_code == 200 and "immutable" in cached.headers["cache-control"]


def test_without_a_build_the_master_says_how_to_make_one(tmp_path: Path) -> None:
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from assay.api._webui import install_webui

    app = FastAPI()
    install_webui(app, tmp_path / "no-dist")
    answer = TestClient(app).get("/experiments")
    assert answer.status_code == 200 and "make webui" in answer.text


def test_a_change_between_the_pages_first_read_and_its_stream_subscribing_is_not_missed(
    cluster: Cluster, page: Any
) -> None:
    exp_id = cluster.submit(experiment_config(), activate=False)
    held: list[Any] = []

    # The stream's request waits until the change is committed: the page's first read is
    # older than the position the stream then subscribes at.
    def hold(route: Any) -> None:
        held.append(route)

    page.route("**/api/v1/events?*", hold)
    try:
        page.goto(f"{cluster.url}/experiments/{exp_id}")
        page.get_by_role("button", name=f"activate experiment {exp_id}").wait_for()
        wait_for("the stream's request to be held", lambda: held)
        cluster.client.transition(exp_id, "cancel")
        cluster.wait_state(exp_id, "CANCELED")
        for route in held:
            route.continue_()
        page.get_by_role("button", name=f"archive experiment {exp_id}").wait_for()
    finally:
        page.unroute("**/api/v1/events?*")
