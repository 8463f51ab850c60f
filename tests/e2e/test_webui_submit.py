"""The Submit page in a real browser against the session's cluster: a config with a problem
shows it at its line and creates nothing; each format offered (an assay config with a context
archive, an NNI config with its directory, OpenPAI v2 YAML and v1 JSON jobs) is submitted once
and is then seen on its own page as the API has it.

Every experiment here asks for no slots (``slots_per_trial: 0``) and every job for no GPU, so
they run beside whatever else holds the agent's slots."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from assay.context import pack_context
from tests.e2e.conftest import shot
from tests.integration.cluster import CONTEXTS, Cluster, wait_for

pytestmark = pytest.mark.integration


def native_config(**searcher: Any) -> str:
    return yaml.safe_dump(
        {
            "name": "submitted-from-the-ui",
            "entrypoint": "python3 train.py",
            "resources": {"slots_per_trial": 0},
            "hyperparameters": {"step_seconds": 0.05, "checkpoint_every": 20},
            "searcher": {
                "name": "single",
                "metric": "loss",
                "max_length": {"batches": 100},
                **searcher,
            },
        },
        sort_keys=False,
    )


def open_submit(page: Any, cluster: Cluster, kind: str = "Experiment") -> None:
    page.goto(f"{cluster.url}/submit")
    page.get_by_role("radio", name=re.compile(f"^{kind}:")).check()


def test_a_bad_config_shows_each_problem_at_its_line_and_creates_nothing(
    cluster: Cluster, page: Any
) -> None:
    before = cluster.client.list_experiments(limit=1000).pagination.total
    open_submit(page, cluster)
    text = native_config().replace("metric: loss", "metric: loss\n  max_trials: 0")
    page.get_by_label("config", exact=True).fill(text)
    problems = page.get_by_role("list", name="problems")
    item = problems.get_by_role("listitem").filter(has_text="searcher.max_trials")
    item.wait_for()
    line = text.splitlines().index("  max_trials: 0") + 1
    assert item.get_by_role("button", name=f"line {line}").count() == 1
    # The line the path names is the one marked in the editor.
    assert page.locator(".backdrop .bad-line").all_inner_texts() == ["  max_trials: 0"]
    shot(page, "submit-invalid")
    assert page.get_by_role("button", name="Submit experiment").is_disabled()
    assert cluster.client.list_experiments(limit=1000).pagination.total == before


def test_problems_are_listed_top_to_bottom(cluster: Cluster, page: Any) -> None:
    open_submit(page, cluster)
    text = "max_restart: 1\n" + native_config().replace(
        "metric: loss", "metric: loss\n  max_trials: 0"
    )
    page.get_by_label("config", exact=True).fill(text)
    problems = page.get_by_role("list", name="problems")
    problems.get_by_role("listitem").filter(has_text="searcher.max_trials").wait_for()
    problems.get_by_role("listitem").filter(has_text="max_restart").wait_for()
    names = problems.get_by_role("button", name=re.compile(r"^line \d+$")).all_inner_texts()
    lines = [int(n.split()[-1]) for n in names]
    assert len(lines) >= 2 and lines == sorted(lines), names


def test_an_assay_config_with_a_context_archive_is_created_and_runs(
    cluster: Cluster, page: Any, tmp_path: Path
) -> None:
    archive = tmp_path / "counter.tar.gz"
    archive.write_bytes(pack_context(CONTEXTS / "counter").data)
    open_submit(page, cluster)
    page.get_by_label("config", exact=True).fill(native_config())
    page.get_by_label("context archive").set_input_files(str(archive))
    page.get_by_text(re.compile(r"Valid: experiment .submitted-from-the-ui.")).wait_for()
    shot(page, "submit")
    page.get_by_role("button", name="Submit experiment").click()
    page.wait_for_url(re.compile(r"/experiments/\d+$"))
    exp_id = int(page.url.rsplit("/", 1)[1])
    assert cluster.client.experiment(exp_id).name == "submitted-from-the-ui"
    # Its trial is seen running (or already done) on the page the UI went to.
    page.get_by_role("table", name="trials").get_by_text(
        re.compile("^(RUNNING|COMPLETED)$")
    ).first.wait_for()
    assert cluster.wait_state(exp_id, "COMPLETED").state == "COMPLETED"


def test_an_nni_config_with_its_directory_reads_the_search_space_from_it(
    cluster: Cluster, page: Any, tmp_path: Path
) -> None:
    project = tmp_path / "nni-project"
    (project / "code").mkdir(parents=True)
    (project / "code" / "trial.py").write_text("print('an nni trial')\n")
    (project / "code" / "__pycache__").mkdir()
    (project / "code" / "__pycache__" / "trial.cpython-311.pyc").write_bytes(b"\0")
    (project / "search_space.json").write_text(
        json.dumps({"lr": {"_type": "choice", "_value": [0.1, 0.01]}})
    )
    config = {
        "experimentName": "nni-from-the-ui",
        "searchSpaceFile": "search_space.json",
        "trialCommand": "python3 trial.py",
        "trialCodeDirectory": "code",
        "trialGpuNumber": 0,
        "maxTrialNumber": 1,
        "tuner": {"name": "Random"},
        "trainingService": {"platform": "local"},
    }
    open_submit(page, cluster)
    page.get_by_label("config", exact=True).fill(yaml.safe_dump(config, sort_keys=False))
    page.get_by_label("context directory").set_input_files(str(project))
    # The packer left the bytecode out, as the CLI does.
    page.get_by_text(re.compile(r"2 files, .* 1 left out by ignore rules")).wait_for()
    page.get_by_text(
        re.compile(r"Valid: experiment .nni-from-the-ui., .*an NNI v2 config")
    ).wait_for()
    page.get_by_role("button", name="Submit experiment").click()
    page.wait_for_url(re.compile(r"/experiments/\d+$"))
    exp_id = int(page.url.rsplit("/", 1)[1])
    exp = cluster.client.experiment(exp_id)
    assert exp.name == "nni-from-the-ui"
    assert exp.config["hyperparameters"]["lr"]["options"] == [0.1, 0.01]
    trial = wait_for("its trial", lambda: next(iter(cluster.client.trials(exp_id)), None))
    wait_for("the trial's line", lambda: "an nni trial" in cluster.trial_logs(trial.id))
    page.get_by_role("table", name="trials").get_by_role(
        "link", name=str(trial.id), exact=True
    ).wait_for()


PAI_V2 = """\
protocolVersion: 2
name: ui-job-v2
type: job
prerequisites:
  - {name: image, type: dockerimage, uri: python:3.11}
taskRoles:
  main:
    instances: 1
    dockerImage: image
    resourcePerInstance: {cpu: 1, memoryMB: 128, gpu: 0}
    commands:
      - echo hello from the v2 job
"""

PAI_V1 = json.dumps(
    {
        "jobName": "ui-job-v1",
        "image": "python:3.11",
        "taskRoles": [
            {
                "name": "main",
                "taskNumber": 1,
                "cpuNumber": 1,
                "memoryMB": 128,
                "gpuNumber": 0,
                "command": "echo hello from the v1 job",
            }
        ],
    },
    indent=2,
)


@pytest.mark.parametrize(
    ("text", "name", "line"),
    [
        (PAI_V2, "ui-job-v2", "hello from the v2 job"),
        (PAI_V1, "ui-job-v1", "hello from the v1 job"),
    ],
    ids=["openpai-v2", "openpai-v1"],
)
def test_an_openpai_job_is_submitted_and_followed_to_its_end_with_its_logs(
    cluster: Cluster, page: Any, text: str, name: str, line: str
) -> None:
    open_submit(page, cluster, kind="Job")
    page.get_by_label("config", exact=True).fill(text)
    page.get_by_text(re.compile(f"Valid: job .{name}.")).wait_for()
    page.get_by_role("button", name="Submit job").click()
    page.wait_for_url(re.compile(r"/tasks/\d+$"))
    task_id = int(page.url.rsplit("/", 1)[1])
    assert cluster.client.task(task_id).name == name
    logs = page.get_by_label("logs")
    page.wait_for_function(f"el => el.textContent.includes({line!r})", arg=logs.element_handle())
    page.get_by_role("heading").get_by_text("SUCCEEDED").wait_for()
    assert cluster.client.task(task_id).state == "SUCCEEDED"
    if name == "ui-job-v2":
        shot(page, "job")


def test_a_problem_in_an_openpai_v1_task_role_is_marked_at_its_own_line(
    cluster: Cluster, page: Any
) -> None:
    open_submit(page, cluster, kind="Job")
    text = PAI_V1.replace('"taskNumber": 1', '"taskNumber": "one"')
    page.get_by_label("config", exact=True).fill(text)
    item = page.get_by_role("list", name="problems").get_by_role("listitem")
    item.filter(has_text="taskRoles[0].taskNumber").wait_for()
    line = next(i for i, row in enumerate(text.splitlines(), 1) if '"taskNumber"' in row)
    assert item.get_by_role("button", name=f"line {line}").count() == 1
    assert page.locator(".backdrop .bad-line").all_inner_texts() == ['      "taskNumber": "one",']


def test_a_job_pasted_as_an_experiment_says_to_choose_job_and_is_then_valid(
    cluster: Cluster, page: Any
) -> None:
    open_submit(page, cluster)
    page.get_by_label("config", exact=True).fill(PAI_V2)
    alert = page.get_by_role("alert").filter(has_text="choose “Job” above")
    alert.wait_for()
    assert "assay job submit" not in alert.inner_text()
    alert.get_by_role("button", name="Choose Job").click()
    assert page.get_by_role("radio", name=re.compile("^Job:")).is_checked()
    page.get_by_text(re.compile("Valid: job .ui-job-v2.")).wait_for()
