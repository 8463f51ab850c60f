"""A master started with ``read_processes`` (``python -m assay.api``, as ``assay master`` runs
it): its pages come from its read processes, as the CLI and the web UI read them, and the read
processes end with it, even when it is killed outright."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
import yaml

from tests.integration.cluster import Cluster, wait_for
from tests.integration.test_lifecycle import counter_config
from tests.processes import alive, spawned_children

pytestmark = pytest.mark.integration


def test_pages_come_from_the_read_processes_which_end_with_the_master(tmp_path: Path) -> None:
    config = tmp_path / "master.yaml"
    config.write_text(yaml.safe_dump({"read_processes": 2}))
    cluster = Cluster(tmp_path / "home", master_config=config)
    # The suite's masters are forked from a server of its own; this one starts as users start
    # theirs, since a read process is a child of the master's own interpreter.
    cluster.env["ASSAY_TEST_MASTER_EXEC"] = "1"
    try:
        cluster.start_master()
        assert cluster.master is not None
        master_pid = cluster.master.pid
        cluster.start_agent("agent-1", slots=1)
        exp_id = cluster.submit(counter_config(length=5))
        cluster.wait_state(exp_id, "COMPLETED")

        listed = json.loads(cluster.cli("experiment", "list", "--json").stdout)["experiments"]
        assert [(e["id"], e["state"]) for e in listed] == [(exp_id, "COMPLETED")]
        trials = json.loads(cluster.cli("experiment", "list-trials", str(exp_id), "--json").stdout)
        (trial,) = trials
        assert trial["state"] == "COMPLETED"
        assert cluster.client.trial(trial["id"]).state == "COMPLETED"
        assert json.loads(cluster.cli("job", "list", "--json").stdout)["jobs"] == []
        readers = spawned_children(master_pid)
        assert readers, "the master read its pages without a read process"

        cluster.kill_master(signal.SIGKILL)
        wait_for("the read processes to end", lambda: not any(map(alive, readers)), 30)
    finally:
        cluster.stop()
