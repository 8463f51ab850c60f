"""The hostile-archive corpus against a real cluster: the master refuses every archive at upload
with 400 (413 for the bombs) naming the member and the rule, and creates nothing; an agent
handed one anyway (a row written before the master checked) unpacks nothing and writes nowhere.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import textwrap

import httpx
import pytest

from assay.errors import InvalidContext, TooLarge
from tests.integration.cluster import Cluster
from tests.integration.test_upload import NOTHING, stored_rows
from tests.unit.context.test_context_archive_safety import reg, tar_gz
from tests.unit.context.test_hostile_archives import CORPUS

pytestmark = pytest.mark.integration

CONFIG = textwrap.dedent(
    """
    entrypoint: python3 train.py
    max_restarts: 0
    searcher: {name: single, metric: loss, max_length: {batches: 5}}
    """
)

STATUS = {InvalidContext: 400, TooLarge: 413}


def test_every_hostile_archive_is_refused_at_upload_and_nothing_is_created(
    cluster: Cluster,
) -> None:
    wrong: list[str] = []
    with httpx.Client(base_url=cluster.url, headers=cluster.auth_headers(), timeout=120) as http:
        for case, hostile in CORPUS.items():
            answer = http.post(
                "/api/v1/experiments",
                data={"config": CONFIG},
                files={
                    "context": ("context.tar.gz", hostile.build(cluster.home), "application/gzip")
                },
            )
            error = answer.json().get("error", {})
            if (
                answer.status_code != STATUS[hostile.error]
                or error.get("type") != hostile.error.type
                or not re.search(hostile.message(cluster.home), error.get("message", ""))
            ):
                wrong.append(f"{case}: {answer.status_code} {answer.text[:300]}")
        listed = http.get("/api/v1/experiments").json()
    assert wrong == [], (
        f"{len(wrong)} of {len(CORPUS)} hostile archives were not refused as expected"
    )
    assert listed["experiments"] == []
    assert stored_rows(cluster) == NOTHING
    # The archives aim their escapes at the cluster's home: only the master's own files are there.
    assert {p.name for p in cluster.home.iterdir() if not p.name.startswith("assay.db")} == {"logs"}


def test_agent_given_a_hostile_context_the_master_never_checked_unpacks_nothing(
    cluster: Cluster,
) -> None:
    exp_id = cluster.submit(CONFIG, activate=False)
    escape = cluster.home / "escaped.txt"
    hostile = tar_gz(reg("train.py", b"print('unpacked')\n"), reg(str(escape), b"owned\n"))
    # As if stored by a master that did not check archives: the row and its digest replaced.
    with sqlite3.connect(cluster.home / "assay.db") as db:
        db.execute(
            "UPDATE contexts SET data = ?, sha256 = ?",
            (hostile, hashlib.sha256(hostile).hexdigest()),
        )
    cluster.client.transition(exp_id, "activate")
    cluster.wait_state(exp_id, "ERROR")
    (trial,) = cluster.client.trials(exp_id)
    logs = "\n".join(cluster.trial_logs(trial.id))
    assert f"could not start the trial: context archive member '{escape}' is an absolute path" in (
        logs
    )
    assert not escape.exists()
    unpacked = list((cluster.home / "agents").rglob("train.py"))
    assert unpacked == [], "not even the harmless member before the bad one is written"
