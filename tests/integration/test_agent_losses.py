"""Agents frozen (SIGSTOP, as a machine that hangs) and lost: the trial runs again elsewhere
without spending its ``max_restarts``, and the copy the master gave up on is fenced off: killed
at once when its agent wakes, refused whatever it reports, and stopped by its own harness at
its next request. Real master and agent processes on loopback."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from assay.protocol import PING_SECONDS
from tests.integration.cluster import CONTEXTS, Cluster, wait_for

pytestmark = pytest.mark.integration

LOST_AFTER = 3
"""``agent_lost_after_seconds`` of these masters. A frozen agent's WebSocket is first closed by
the master's ping timeout (``PING_TIMEOUT`` after a ping goes unanswered), then it is lost
after this."""
PING_TIMEOUT = 10
"""``agent_ping_timeout_seconds`` of these masters: a frozen agent is noticed within the ping
interval and this (the default, 60 s, is for a master under a large cluster's load)."""
GIVEN_UP_WITHIN = PING_SECONDS + PING_TIMEOUT + LOST_AFTER + 30
"""How soon a frozen agent's trial must be given up: with 30 s to spare, and less than the
default ping timeout alone, so a master that ignored the setting fails these tests."""
FENCE_WINDOW = 10.0
"""How soon after it wakes the old copy must be gone: well under the agents' kill grace."""
GRACE = "60"


def config(pid_dir: Path, length: int, **hparams: object) -> str:
    return yaml.safe_dump(
        {
            "name": "fenced",
            "entrypoint": "python3 train.py",
            "hyperparameters": {"pid_dir": str(pid_dir), "step_seconds": 0.05, **hparams},
            "searcher": {
                "name": "single",
                "metric": "loss",
                "max_length": {"batches": length},
            },
            "max_restarts": 0,
        }
    )


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    storage = tmp_path / "checkpoints"
    storage.mkdir()
    settings = tmp_path / "master.yaml"
    settings.write_text(
        yaml.safe_dump(
            {
                "agent_lost_after_seconds": LOST_AFTER,
                "agent_heartbeat_seconds": 1,
                "agent_ping_timeout_seconds": PING_TIMEOUT,
                "checkpoint_storage": {"type": "shared_fs", "host_path": str(storage)},
            }
        )
    )
    made = Cluster(tmp_path / "home", master_config=settings)
    made.start_master()
    try:
        yield made
    finally:
        for proc in made.agents.values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGCONT)
        made.stop()


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, ended but not yet reaped, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def pid_of(pid_dir: Path, run: int) -> int | None:
    path = pid_dir / f"run-{run}.pid"
    with contextlib.suppress(OSError, ValueError):
        return int(path.read_text())
    return None


def stored_checkpoints(storage: Path) -> set[str]:
    return {p.name for p in storage.iterdir() if not p.name.startswith(".")}


def test_a_frozen_machines_trial_runs_once_elsewhere_and_its_copy_dies_when_it_wakes(
    cluster: Cluster, tmp_path: Path
) -> None:
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    storage = tmp_path / "checkpoints"
    cluster.start_agent("frozen", slots=1, extra=("--kill-grace", GRACE))
    # The copy reports rarely, and on SIGTERM writes a checkpoint that takes longer than the
    # window: one that was only asked to stop would write files beside its replacement.
    exp_id = cluster.submit(
        config(pid_dir, 400, report_every=40, checkpoint_every=10, term_checkpoint_seconds=30),
        context=CONTEXTS / "fenced",
    )
    trial_id = wait_for("the trial", lambda: cluster.client.trials(exp_id))[0].id
    wait_for(
        "a checkpoint",
        lambda: (t := cluster.client.trial(trial_id)).latest_checkpoint and t.steps_completed >= 20,
    )
    old_pid = pid_of(pid_dir, 1)
    assert old_pid is not None and alive(old_pid)
    agent = cluster.agents["frozen"]
    group = os.getpgid(old_pid)
    os.kill(agent.pid, signal.SIGSTOP)
    os.killpg(group, signal.SIGSTOP)
    try:
        cluster.start_agent("rescuer", slots=1)
        detail = wait_for(
            "the trial to be given up on its frozen agent and started on the rescuer",
            lambda: (d := cluster.client.trial(trial_id)).runs == 2 and pid_of(pid_dir, 2) and d,
            timeout=GIVEN_UP_WITHIN,
        )
        old_alloc = detail.allocations[0]
        assert old_alloc.state == "TERMINATED" and old_alloc.lost, old_alloc
        assert "agent frozen was lost" in old_alloc.exit_reason
        # What the old copy had stored when it was given up on: nothing may be added to it.
        fenced_metrics = [m.steps_completed for m in cluster.client.metrics(trial_id) if m.run == 1]
        fenced_checkpoints = {
            c.uuid
            for c in cluster.client.trial_checkpoints(trial_id)
            if c.allocation_id == old_alloc.id
        }
        files_before = stored_checkpoints(storage)
    finally:
        os.killpg(group, signal.SIGCONT)
        os.kill(agent.pid, signal.SIGCONT)
    woke = time.monotonic()
    wait_for("the old copy to be killed", lambda: not alive(old_pid), timeout=FENCE_WINDOW)
    assert time.monotonic() - woke < FENCE_WINDOW

    exp = cluster.wait_state(exp_id, "COMPLETED", "ERROR", timeout=180)
    trial = cluster.client.trial(trial_id)
    assert exp.state == "COMPLETED", (trial.message, cluster.log("master"))
    assert (trial.restarts, trial.infra_restarts, trial.runs) == (0, 1, 2)
    assert trial.steps_completed == 400
    assert [
        m.steps_completed for m in cluster.client.metrics(trial_id) if m.run == 1
    ] == fenced_metrics, "the old copy stored a metric after it was given up on"
    registered = cluster.client.trial_checkpoints(trial_id)
    assert {c.uuid for c in registered if c.allocation_id == old_alloc.id} == fenced_checkpoints, (
        "the old copy registered a checkpoint after it was given up on"
    )
    # Only the new copy's results count: the trial ends on its checkpoint and its validation.
    latest = cluster.client.checkpoint(str(trial.latest_checkpoint))
    assert latest.allocation_id == trial.allocations[1].id
    validations = cluster.client.metrics(trial_id, "validation")
    assert [(v.run, v.steps_completed) for v in validations] == [(2, 400)]
    # The copy was killed before its SIGTERM handler could write anything.
    stray = stored_checkpoints(storage) - files_before - {c.uuid for c in registered}
    assert not stray, f"the old copy wrote checkpoint files after it was given up on: {stray}"
    logs = cluster.trial_logs(trial_id)
    assert not any("saving on SIGTERM" in line for line in logs), logs

    shown = cluster.cli("trial", "describe", str(trial_id), check=True).stdout
    assert "failures 0  agent losses 1" in shown, shown
    listed = json.loads(cluster.cli("e", "list-trials", str(exp_id), "--json", check=True).stdout)
    assert [(t["restarts"], t["infra_restarts"]) for t in listed] == [(0, 1)]


def test_a_copy_that_runs_on_while_its_agent_is_frozen_stops_at_its_next_report(
    cluster: Cluster, tmp_path: Path
) -> None:
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    cluster.start_agent("frozen", slots=1, extra=("--kill-grace", GRACE))
    exp_id = cluster.submit(
        config(pid_dir, 100_000, report_every=1, checkpoint_every=50),
        context=CONTEXTS / "fenced",
    )
    trial_id = wait_for("the trial", lambda: cluster.client.trials(exp_id))[0].id
    wait_for("a checkpoint", lambda: cluster.client.trial(trial_id).latest_checkpoint)
    old_pid = pid_of(pid_dir, 1)
    assert old_pid is not None
    agent = cluster.agents["frozen"]
    # Only the agent hangs: its trial trains and reports on, unaware.
    os.kill(agent.pid, signal.SIGSTOP)
    try:
        cluster.start_agent("rescuer", slots=1)
        wait_for(
            "the trial to be given up on its frozen agent",
            lambda: cluster.client.trial(trial_id).runs == 2,
            timeout=GIVEN_UP_WITHIN,
        )
        fenced_at = time.monotonic()
        # Its next report (every step) is refused as fenced, and its harness ends it.
        wait_for("the old copy to stop itself", lambda: not alive(old_pid), timeout=FENCE_WINDOW)
        assert time.monotonic() - fenced_at < FENCE_WINDOW
    finally:
        os.kill(agent.pid, signal.SIGCONT)
    # Its last words reach the trial's log once its agent wakes and ships its output.
    wait_for(
        "the old copy's last line",
        lambda: any(
            "has ended (the master gave it up" in line and "stopping this process now" in line
            for line in cluster.trial_logs(trial_id)
        ),
        timeout=30,
    )
    trial = cluster.client.trial(trial_id)
    assert (trial.state, trial.restarts, trial.infra_restarts) == ("RUNNING", 0, 1)
    cluster.client.transition(exp_id, "kill")
    cluster.wait_state(exp_id, "CANCELED")
