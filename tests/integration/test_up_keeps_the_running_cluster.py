"""``assay up`` run again keeps the cluster that is up, wherever it listens: one master per
``ASSAY_HOME``, and ``assay down`` stops it."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from tests.integration.cluster import free_port, wait_for
from tests.integration.test_up_signs_in import private_assay

pytestmark = pytest.mark.integration


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not Path(f"/proc/{pid}/stat").read_text().split(") ")[-1].startswith("Z")


def test_up_without_a_port_keeps_the_cluster_up_on_another_port_and_down_stops_it(
    tmp_path: Path,
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    run = tmp_path / "home" / "run"
    assay = private_assay(tmp_path)
    try:
        first = assay("up", "--port", str(port), "--slots", "1")
        assert first.returncode == 0, first.stderr
        kept = {name: (run / name).read_text() for name in ("master.pid", "agent-token")}

        # No --port: the cluster up on its own port is kept and named, nothing else starts.
        again = assay("up", "--slots", "1")
        assert again.returncode == 0, again.stderr
        assert f"cluster already up at {url}" in again.stdout, again.stdout
        assert {name: (run / name).read_text() for name in kept} == kept
        assert json.loads((run / "cluster.json").read_text())["master"] == url

        # Other slots would be ignored by the agent that runs: refused in one line.
        resized = assay("up", "--slots", "2")
        assert resized.returncode == 1
        assert resized.stderr.strip().splitlines() == [
            f"error: the cluster in {tmp_path / 'home'} is up with 1 slot; "
            "`assay down` first to start it with 2"
        ], resized.stderr

        # Another --port would move it: refused in one line saying how.
        moved = assay("up", "--port", str(free_port()))
        assert moved.returncode == 1
        lines = moved.stderr.strip().splitlines()
        assert len(lines) == 1, lines
        assert f"a cluster is already up at {url}" in lines[0]
        assert "assay down" in lines[0] and str(tmp_path / "home") in lines[0]

        # Its agent lost, a plain `up` starts only the agent, for the master where it is.
        agent = int((run / "agent.pid").read_text())
        os.kill(agent, signal.SIGTERM)
        wait_for("the agent to end", lambda: not alive(agent))
        restarted = assay("up")
        assert restarted.returncode == 0, restarted.stderr
        assert f"cluster up: master {url}, 1 agent(s)" in restarted.stdout, restarted.stdout
        assert (run / "master.pid").read_text() == kept["master.pid"]

        master = int(kept["master.pid"])
        down = assay("down")
        assert down.returncode == 0 and "stopped: agent, master" in down.stdout, down.stdout
        assert not alive(master)
    finally:
        assay("down")

    # With no cluster recorded, the error says so rather than naming the default URL alone
    # (unless something happens to answer there on this machine).
    after = assay("experiment", "list")
    if after.returncode != 0:
        lines = after.stderr.strip().splitlines()
        assert len(lines) == 1, lines
        assert "no cluster is up" in lines[0] and str(tmp_path / "home") in lines[0], lines
        assert "`assay up` starts one" in lines[0]
