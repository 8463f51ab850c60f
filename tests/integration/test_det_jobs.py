"""Determined's own ``det`` (0.38.1) on assay's job queue and cluster, on SQLite and
PostgreSQL: the job queue walk-through of Determined's docs (two experiments on one slot, the
second moved ahead of the first, which it then preempts, then both reprioritized in a batch),
what the queue refuses, in one line each, and the agents, slots and tasks that hold the slot.

det 0.38.1 has no ``--ahead-of`` (its parser refuses it): the move is the request its web UI
sends, made here with Determined's own client library."""

from __future__ import annotations

import json
import re
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.integration.cluster import CONTEXTS, Cluster, wait_for
from tests.integration.det_client import ALICE, DET_PYTHON, det, det_cluster, one_line

pytestmark = pytest.mark.integration

__all__ = ["det_cluster"]
"""The fixture this module's tests take, from the module every test of det shares."""

MOVE = textwrap.dedent(
    """
    import os, sys
    from determined.common.api import authentication, bindings

    session = authentication.login(
        os.environ["DET_MASTER"], os.environ["DET_USER"], os.environ["DET_PASS"]
    )
    job, anchor = sys.argv[1:]
    move = bindings.v1QueueControl(jobId=job, aheadOf=anchor)
    bindings.post_UpdateJobQueue(session, body=bindings.v1UpdateJobQueueRequest(updates=[move]))
    """
)
"""What Determined's web UI sends to move a job ahead of another, as its client library does."""


def admin(cluster: Cluster) -> dict[str, str]:
    """How ``det`` signs in as the cluster's admin, who submitted the experiments."""
    return {"DET_USER": "admin", "DET_PASS": cluster.admin_password}


def create(cluster: Cluster, tmp_path: Path, name: str) -> int:
    """An experiment submitted with assay's own CLI: one trial long enough to outlast the test,
    checkpointing often (so a preemption stops it within a second), on agent ``solo``'s one
    slot only."""
    config = tmp_path / f"{name}.yaml"
    config.write_text(
        textwrap.dedent(
            f"""
            name: {name}
            entrypoint: python3 train.py
            hyperparameters: {{step_seconds: 0.05, checkpoint_every: 5}}
            searcher: {{name: single, metric: loss, max_length: {{batches: 5000}}}}
            resources: {{agent_label: solo}}
            """
        )
    )
    created = cluster.cli("e", "create", str(config), str(CONTEXTS / "counter"), check=True)
    found = re.search(r"created experiment (\d+)", created.stdout)
    assert found, created.stdout
    return int(found.group(1))


def table(result: subprocess.CompletedProcess[str]) -> list[list[str]]:
    """The rows of a table ``det`` printed, each a list of its cells."""
    assert result.returncode == 0, result
    lines = [line for line in result.stdout.splitlines() if "|" in line]
    return [[cell.strip() for cell in line.split("|")] for line in lines[1:]]


def queue_is(cluster: Cluster, *slots: tuple[str, int, int]) -> bool:
    """Whether assay's queue holds these jobs (name, slots acquired, slots needed) in order."""
    jobs = cluster.client.jobs().jobs
    return [(j.name, j.slots_acquired, j.slots_needed) for j in jobs] == list(slots)


def test_det_walks_the_job_queue_as_determineds_docs_show_it(
    det_cluster: Cluster, tmp_path: Path
) -> None:
    cluster = det_cluster
    cluster.start_agent("solo", slots=1, labels=("solo",))
    first = create(cluster, tmp_path, "first_job")
    wait_for("first_job to run", lambda: queue_is(cluster, ("first_job", 1, 1)))
    second = create(cluster, tmp_path, "second_job")
    wait_for("both queued", lambda: len(cluster.client.jobs().jobs) == 2)
    me = admin(cluster)

    listed = det(cluster, tmp_path, "job", "list", **me)
    header = listed.stdout.splitlines()[0]
    assert [h.strip() for h in header.split("|")] == [
        "#",
        "ID",
        "Type",
        "Job Name",
        "Priority",
        "Submitted",
        "Slots (acquired/needed)",
        "State",
        "User",
    ]
    rows = table(listed)
    first_id, second_id = rows[0][1], rows[1][1]
    assert [(r[0], r[2], r[3], r[4], r[6], r[7], r[8]) for r in rows] == [
        ("0", "TYPE_EXPERIMENT", f"first_job ({first})", "42", "1/1", "STATE_SCHEDULED", "admin"),
        ("1", "TYPE_EXPERIMENT", f"second_job ({second})", "42", "0/1", "STATE_QUEUED", "admin"),
    ]
    assert table(det(cluster, tmp_path, "job", "ls", **me)) == rows

    # The docs' `det job update ID --ahead-of ID`: det 0.38.1's parser has no such option.
    flag = det(cluster, tmp_path, "job", "update", second_id, "--ahead-of", first_id, **me)
    assert flag.returncode == 2
    assert f"unrecognized arguments: --ahead-of {first_id}" in flag.stderr
    moved = subprocess.run(
        [str(DET_PYTHON), "-c", MOVE, second_id, first_id],
        env={"DET_MASTER": f"{cluster.url}/det", "HOME": str(tmp_path), **me},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert moved.returncode == 0, moved.stderr
    # second_job preempts first_job, which checkpoints and gives its slot up.
    wait_for(
        "second_job to run in first_job's slot",
        lambda: queue_is(cluster, ("second_job", 1, 1), ("first_job", 0, 1)),
        timeout=60,
    )
    reordered = table(det(cluster, tmp_path, "job", "list", **me))
    assert [(r[1], r[4], r[6], r[7]) for r in reordered] == [
        (second_id, "42", "1/1", "STATE_SCHEDULED"),
        (first_id, "42", "0/1", "STATE_QUEUED"),
    ]

    updates = (f"{second_id}.priority=1", f"{first_id}.priority=1")
    batch = det(cluster, tmp_path, "job", "update-batch", *updates, **me)
    assert batch.returncode == 0, batch
    after = table(det(cluster, tmp_path, "job", "list", **me))
    assert [(r[1], r[4], r[6], r[7]) for r in after] == [
        (second_id, "1", "1/1", "STATE_SCHEDULED"),
        (first_id, "1", "0/1", "STATE_QUEUED"),
    ]
    as_json = det(cluster, tmp_path, "job", "list", "--json", **me)
    jobs = json.loads(as_json.stdout)["jobs"]
    assert [(j["jobId"], j["entityId"], j["priority"]) for j in jobs] == [
        (second_id, str(second), 1),
        (first_id, str(first), 1),
    ]
    paged = det(cluster, tmp_path, "job", "list", "--limit", "1", "--reverse", "--csv", **me)
    assert paged.stdout.splitlines()[1].split(",")[1] == first_id
    assert len(paged.stdout.splitlines()) == 3, "both pages, one job each"

    # What the queue refuses, as the docs' constraints say: a weight in a priority pool, and
    # a job that is not in the queue.
    weight = one_line(det(cluster, tmp_path, "job", "update", first_id, "--weight", "2", **me))
    assert weight.startswith(f"Failed to update job: weight cannot be set on job {first_id}")
    assert 'pool "default" uses the priority scheduler' in weight and "--priority" in weight
    gone = one_line(det(cluster, tmp_path, "job", "update", "f00dcafe", "-p", "3", **me))
    assert gone == "Failed to update job: job f00dcafe is not in the queue"
    alice = one_line(
        det(cluster, tmp_path / "alice", "job", "update", first_id, "-p", "3", **ALICE)
    )
    assert "Forbidden(" in alice and f"job {first_id}" in alice
    # None of it changed anything.
    assert table(det(cluster, tmp_path, "job", "list", **me)) == after

    # The slot second_job holds, as the cluster views show it.
    agents = table(det(cluster, tmp_path, "agent", "list", **me))
    assert [(r[0], r[3], r[4], r[5], r[6]) for r in agents] == [
        ("agent-1", "2", "0", "default", "True"),
        ("solo", "1", "1", "default", "True"),
    ]
    trial = cluster.client.trials(second)[0].id
    allocation = cluster.client.trial(trial).allocations[-1]
    name = f"Trial {trial} (Experiment {second})"
    slots = table(det(cluster, tmp_path, "slot", "list", **me))
    assert [(r[0], r[1], r[2], r[5], r[6]) for r in slots] == [
        ("agent-1", "default", "0", "FREE", "FREE"),
        ("agent-1", "default", "1", "FREE", "FREE"),
        ("solo", "default", "0", allocation.id, name),
    ]
    tasks = table(det(cluster, tmp_path, "task", "list", **me))
    assert [(r[0], r[1], r[2], r[3], r[5], r[6], r[7]) for r in tasks] == [
        (f"trial-{trial}", allocation.id, name, "1", "solo", "1", "default")
    ]
    refused = one_line(det(cluster, tmp_path, "agent", "disable", "solo", **me))
    assert refused.startswith("Failed to disable agent: agent solo cannot be disabled")

    for exp in (first, second):
        cluster.cli("e", "kill", str(exp), check=True)
    for exp in (first, second):
        cluster.wait_state(exp, "CANCELED")
    assert table(det(cluster, tmp_path, "job", "list", **me)) == []
