"""Stopping the cluster (``assay down``) on a real database: running trials are asked to
checkpoint and exit, nothing new starts, and however their processes end they are queued again
with no restart counted; a master started afterwards, or one killed midway and started again,
resumes them."""

from __future__ import annotations

from pathlib import Path

from assay.config import MasterConfig
from assay.db import Database
from assay.master import Master
from assay.master.experiments._transitions import CLUSTER_STOPPED
from tests.unit.master.support import run
from tests.unit.master.test_handlers import connect_agent, exited, start_single, trials


def test_a_drained_trial_killed_after_the_grace_is_queued_with_no_restart_and_resumes_later(
    master: Master, context: bytes, db_url: str, tmp_path: Path
) -> None:
    _, agent, alloc_id = start_single(master, context)
    status = run(master.drain.drain(0))
    assert status.running_trials == [trials(master)[0].id]
    assert run(master.harness.preemption(alloc_id, timeout=0)).preempt is True

    exited(master, alloc_id, -15)  # the grace ran out: killed with its agent
    trial = trials(master)[0]
    assert (trial.state, trial.restarts, trial.message) == ("QUEUED", 0, CLUSTER_STOPPED)
    assert run(master.drain.drain(0)).running_trials == []
    run(master.loops.schedule_once())
    assert len(agent.starts()) == 1, "nothing starts while the cluster stops"

    reborn = Master(MasterConfig(), Database(db_url), tmp_path / "home")
    again = connect_agent(reborn)
    run(reborn.loops.schedule_once())
    assert len(again.starts()) == 1
    trial = trials(reborn)[0]
    assert (trial.state, trial.restarts, trial.runs, trial.message) == ("RUNNING", 0, 2, "")
    reborn.db.dispose()


def test_a_master_killed_mid_drain_comes_back_and_resumes_the_trial_without_a_restart(
    master: Master, context: bytes, db_url: str, tmp_path: Path
) -> None:
    _, _, alloc_id = start_single(master, context)
    run(master.drain.drain(0))
    # The master dies here; the agent is stopped too and comes back without the process.
    reborn = Master(MasterConfig(), Database(db_url), tmp_path / "home")
    agent = connect_agent(reborn, running=[])
    trial = trials(reborn)[0]
    assert (trial.state, trial.restarts) == ("QUEUED", 0)
    run(reborn.loops.schedule_once())
    assert [s["allocation_id"] for s in agent.starts()] == [f"{trial.id}.2"]
    assert alloc_id == f"{trial.id}.1"
    reborn.db.dispose()
