"""The Jobs page in a real browser against the session's cluster: an OpenPAI job shows up while
the page is open, moves to SUCCEEDED there without a reload, stays listed once it has left the
queue, and links to its page; the filters are in the URL; a job that does not exist points to
this page.

Each job here asks for no GPU, so it runs beside whatever else holds the agent's slots."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from playwright.sync_api import expect

from assay.errors import Conflict
from tests.e2e.conftest import shot
from tests.integration.cluster import Cluster, wait_for

pytestmark = pytest.mark.integration

JOB = """\
protocolVersion: 2
name: listed-job
type: job
prerequisites:
  - {name: image, type: dockerimage, uri: python:3.11}
taskRoles:
  main:
    instances: 1
    dockerImage: image
    resourcePerInstance: {cpu: 1, memoryMB: 128, gpu: 0}
    commands:
      - echo a listed job
"""


def test_an_ended_job_stays_listed_and_links_to_its_page(cluster: Cluster, page: Any) -> None:
    page.goto(f"{cluster.url}/experiments")
    page.get_by_role("navigation", name="main").get_by_role("link", name="Jobs").click()
    page.wait_for_url(re.compile(r"/tasks$"))
    table = page.get_by_role("table", name="jobs")
    table.wait_for()
    # Submitted while the page is open: it appears and ends there without a reload.
    task = cluster.client.submit_job(JOB)
    row = table.get_by_role("row").filter(
        has=page.get_by_role("link", name=str(task.id), exact=True)
    )
    row.get_by_text("SUCCEEDED").wait_for()
    wait_for("the job to end", lambda: cluster.client.task(task.id).ended_at is not None)
    assert cluster.client.task(task.id).state == "SUCCEEDED"
    assert "listed-job" in row.inner_text()
    assert "job" in row.get_by_role("cell").nth(2).inner_text()
    assert "admin" in row.inner_text()

    # Gone from the queue, still here after a reload; its link opens its page.
    assert all(j.name != "listed-job" for j in cluster.client.jobs().jobs)
    page.reload()
    row.wait_for()
    shot(page, "jobs")
    row.get_by_role("link", name="listed-job").click()
    page.wait_for_url(re.compile(rf"/tasks/{task.id}$"))
    page.get_by_role("heading").get_by_text("SUCCEEDED").wait_for()
    # Its config, as OpenPAI's portal shows it: protocol v2, as assay runs it.
    shown = yaml.safe_load(page.get_by_label("job config").inner_text())
    assert shown["name"] == "listed-job"
    assert shown["taskRoles"]["main"]["commands"] == ["echo a listed job"]

    # Its log: searched (the search is in the URL) and downloaded whole.
    logs = page.get_by_label("logs", exact=True)
    expect(logs).to_contain_text("[main/0] a listed job")
    page.get_by_role("searchbox", name="Search").fill("no such text")
    page.wait_for_url(re.compile(r"q=no"))
    expect(logs).to_have_text("")
    with page.expect_download() as got:
        page.get_by_role("button", name="Download").click()
    assert "[main/0] a listed job" in Path(got.value.path()).read_text(encoding="utf-8")


def test_the_jobs_filters_are_in_the_url(cluster: Cluster, page: Any) -> None:
    task = cluster.client.submit_job(JOB.replace("listed-job", "filtered-job"))
    wait_for("the job to end", lambda: cluster.client.task(task.id).ended_at is not None)
    link = page.get_by_role("table", name="jobs").get_by_role("link", name=str(task.id), exact=True)

    page.goto(f"{cluster.url}/tasks?ended=0")
    page.get_by_text(re.compile("ended ones are hidden")).wait_for()
    assert not page.get_by_label("Show ended").is_checked()
    assert link.count() == 0

    # The boxes show the URL, which the router updates a moment after the click: click, then
    # wait for the URL (check() wants the box changed at once).
    page.get_by_label("Show ended").click()
    link.wait_for()
    page.get_by_role("checkbox", name="FAILED").click()
    page.wait_for_url(re.compile(r"state=FAILED"))
    expect(page.get_by_role("checkbox", name="FAILED")).to_be_checked()
    page.get_by_text("No jobs match.").wait_for()

    page.goto(f"{cluster.url}/tasks?state=SUCCEEDED&state=FAILED")
    link.wait_for()
    assert page.get_by_role("checkbox", name="SUCCEEDED").is_checked()

    # Only ended states with ended jobs hidden: nothing, not every job that has not ended.
    page.goto(f"{cluster.url}/tasks?state=SUCCEEDED&ended=0")
    page.get_by_text(re.compile("ended ones are hidden")).wait_for()
    assert link.count() == 0


def test_a_missing_job_points_to_the_jobs_page(cluster: Cluster, page: Any) -> None:
    page.goto(f"{cluster.url}/tasks/999999")
    alert = page.get_by_role("alert")
    alert.get_by_text(re.compile("Job 999999 not found")).wait_for()
    assert "assay task list" not in alert.inner_text()
    alert.get_by_role("link", name="Jobs").click()
    page.wait_for_url(re.compile(r"/tasks$"))


def test_a_running_job_is_linked_from_the_queue_and_stopped_from_its_page_after_a_question(
    cluster: Cluster, page: Any
) -> None:
    job = JOB.replace("name: listed-job", "name: stopped-job").replace(
        "echo a listed job", "sleep 600"
    )
    task = cluster.client.submit_job(job)
    wait_for("the job to run", lambda: cluster.client.task(task.id).state == "RUNNING")
    page.goto(f"{cluster.url}/jobs")
    page.get_by_role("link", name="stopped-job").click()
    page.wait_for_url(re.compile(rf"/tasks/{task.id}$"))
    asked: list[str] = []

    def answer(dialog: Any) -> None:
        asked.append(dialog.message)
        dialog.accept()

    # How long it has run ticks on while the page is open, with no reload.
    ran = page.get_by_text(re.compile(r"^ran \d"))
    first = ran.inner_text()
    expect(ran).not_to_have_text(first, timeout=5000)
    page.once("dialog", answer)
    page.get_by_role("button", name=f"stop job {task.id}").click()
    wait_for("the job to stop", lambda: cluster.client.task(task.id).ended_at is not None)
    assert asked == [f"Stop job {task.id}? Its running instances are ended."]
    page.get_by_role("heading").get_by_text(cluster.client.task(task.id).state).wait_for()


def test_a_job_that_waits_says_why_on_its_page(cluster: Cluster, page: Any) -> None:
    """In the queue's own words (`assay job ls` has them too). The job asks for a whole agent
    of the largest size, behind jobs that hold every such agent (other tests may have started
    agents of their own on this cluster)."""
    sizes = {a.id: len(a.slots) for a in cluster.client.agents() if a.connected}
    largest = max(sizes.values())

    def job(name: str, command: str) -> str:
        return (
            JOB.replace("name: listed-job", f"name: {name}")
            .replace("gpu: 0", f"gpu: {largest}")
            .replace("echo a listed job", command)
        )

    holding = [
        cluster.client.submit_job(job(f"holding-job-{n}", "sleep 600"))
        for n, size in enumerate(sizes.values())
        if size == largest
    ]
    task = cluster.client.submit_job(job("waiting-job", "echo ran"))
    try:
        page.goto(f"{cluster.url}/tasks/{task.id}")
        said = page.get_by_text(re.compile(r"^Waiting: "))

        def shown() -> bool:
            why = next(j.waiting for j in cluster.client.jobs().jobs if j.task_id == task.id)
            return bool(why) and said.count() == 1 and said.inner_text() == f"Waiting: {why}"

        wait_for("the page to say why the job waits, as the queue does", shown)
        page.get_by_text("not started yet").wait_for()
    finally:
        for each in [task, *holding]:
            with contextlib.suppress(Conflict):  # ended already
                cluster.client.stop_task(each.id)


ROLES_JOB = """\
protocolVersion: 2
name: roles-job
type: job
prerequisites:
  - {name: image, type: dockerimage, uri: python:3.11}
taskRoles:
  ps:
    instances: 1
    dockerImage: image
    resourcePerInstance: {cpu: 0, memoryMB: 64, gpu: 0}
    # The workers' successes end the job, not the ps's (which would end it first).
    completion: {minSucceededInstances: -1}
    commands:
      - echo ps says hi
  worker:
    instances: 2
    dockerImage: image
    resourcePerInstance: {cpu: 0, memoryMB: 64, gpu: 0}
    commands:
      - echo worker $PAI_TASK_INDEX says hi
      - echo worker $PAI_TASK_INDEX complains >&2
"""


def test_a_jobs_log_shows_one_role_one_instance_or_one_stream(cluster: Cluster, page: Any) -> None:
    task = cluster.client.submit_job(ROLES_JOB)
    wait_for("the job to end", lambda: cluster.client.task(task.id).ended_at is not None)
    page.goto(f"{cluster.url}/tasks/{task.id}")
    logs = page.get_by_label("logs", exact=True)
    expect(logs).to_contain_text("[ps/0] ps says hi")
    instance = page.get_by_role("combobox", name="log instance")
    # A role of several instances: all of them, then each one.
    instance.select_option("worker")
    page.wait_for_url(re.compile(r"inst=worker"))
    expect(logs).to_contain_text("[worker/1] worker 1 says hi")
    expect(logs).not_to_contain_text("ps says hi")
    instance.select_option("worker/1")
    expect(logs).not_to_contain_text("worker 0")
    expect(logs).to_contain_text("[worker/1] worker 1 complains")
    page.get_by_role("combobox", name="log stream").select_option("stdout")
    expect(logs).to_have_text("[worker/1] worker 1 says hi")
    # The filters are the URL's: a reload keeps them.
    page.reload()
    expect(page.get_by_label("logs", exact=True)).to_have_text("[worker/1] worker 1 says hi")


def test_a_job_is_resubmitted_from_its_page_under_the_next_free_name(
    cluster: Cluster, page: Any
) -> None:
    task = cluster.client.submit_job(JOB.replace("listed-job", "again-job"))
    wait_for("the job to end", lambda: cluster.client.task(task.id).ended_at is not None)
    page.goto(f"{cluster.url}/tasks/{task.id}")
    page.get_by_role("button", name=f"resubmit job {task.id}").click()
    dialog = page.get_by_role("dialog", name=f"Resubmit job {task.id}")
    dialog.get_by_role("button", name="Resubmit").click()
    # The new job's own page, where it runs as the first did.
    page.wait_for_url(re.compile(rf"/tasks/(?!{task.id}$)\d+$"))
    new_id = int(page.url.rsplit("/", 1)[1])
    assert new_id != task.id
    # The dialog closed on the way: no second Enter resubmits again from the new job's page.
    expect(page.get_by_role("dialog")).to_have_count(0)
    page.get_by_role("heading").get_by_text("again-job-2").wait_for()
    page.get_by_role("heading").get_by_text("SUCCEEDED").wait_for()
    expect(page.get_by_label("logs", exact=True)).to_contain_text("[main/0] a listed job")
