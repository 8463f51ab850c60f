"""A trial whose agent is lost is started again without spending its ``max_restarts`` (counted
apart, in ``infra_restarts``), and the copy the master gave up on is fenced off: its reports and
checkpoints are refused, its long-polls answer that it is fenced, and its agent is told to kill
it, before anything else, when it is heard from again. On a real database (SQLite and
PostgreSQL), without HTTP or agents' processes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from sqlalchemy import select

from assay.config import MasterConfig
from assay.db import Allocation, Checkpoint, Database, Metric, Trial
from assay.errors import Fenced
from assay.master import Caller, Master, Submission
from assay.master.allocations import SETTLE_LIMITS
from assay.protocol import CheckpointReport, Exited, MetricReport
from tests.unit.master.conftest import ADMIN
from tests.unit.master.support import Clock, Recorder, run

LOST_AFTER = 30.0


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def clocked(db_url: str, tmp_path: Path, clock: Clock) -> Iterator[Master]:
    db = Database(db_url)
    settings = MasterConfig(
        allowed_checkpoint_storage={"host_paths": [tmp_path]},
        agent_lost_after_seconds=LOST_AFTER,
    )
    m = Master(settings, db, tmp_path / "home", clock)
    m.core.cluster_id = "test"
    yield m
    db.dispose()


def submit(master: Master, context: bytes, max_restarts: int = 0) -> int:
    text = yaml.safe_dump(
        {
            "entrypoint": "python3 train.py",
            "hyperparameters": {"lr": 0.1},
            "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 100}},
            "max_restarts": max_restarts,
        }
    )
    return run(master.experiments.create(ADMIN, Submission(text, context))).id


def connect(master: Master, agent_id: str, running: list[str] | None = None) -> Recorder:
    agent = Recorder()
    hello = {
        "type": "hello",
        "agent_id": agent_id,
        "slots": [{"id": "0"}],
        "running": running or [],
        "session": f"session-of-{agent_id}",
    }
    run(master.pools.join(hello, agent))
    return agent


def started_on(master: Master, agent: Recorder, agent_id: str) -> str:
    """Schedule, and have ``agent`` report the start it was given; its allocation id."""
    run(master.loops.schedule_once())
    alloc_id = str(agent.starts()[-1]["allocation_id"])
    run(master.agents.on_message(agent_id, {"type": "started", "allocation_id": alloc_id}))
    return alloc_id


def lose(master: Master, clock: Clock, agent_id: str) -> None:
    """The agent's connection drops, and it stays away past ``agent_lost_after_seconds``."""
    run(master.agents.disconnected(master.hub.agents[agent_id]))
    clock.now += LOST_AFTER + 1
    run(master.agents.reap_lost())


def trial_row(master: Master) -> Trial:
    (trial,) = master.db.run_sync(lambda s: s.scalars(select(Trial)).all())
    return trial


def allocation(master: Master, alloc_id: str) -> Allocation:
    alloc = master.db.run_sync(lambda s: s.get(Allocation, alloc_id))
    assert alloc is not None
    return alloc


def caller_of(master: Master, alloc_id: str) -> Caller:
    alloc = allocation(master, alloc_id)
    return Caller(alloc.id, alloc.trial_id, alloc.run)


def test_a_trial_lost_with_its_agent_runs_again_without_spending_max_restarts(
    clocked: Master, clock: Clock, context: bytes
) -> None:
    submit(clocked, context, max_restarts=0)
    first = connect(clocked, "a1")
    old = started_on(clocked, first, "a1")
    lose(clocked, clock, "a1")
    trial = trial_row(clocked)
    assert (trial.state, trial.restarts, trial.infra_restarts) == ("QUEUED", 0, 1)
    assert trial.message == (
        "started again after losing its agent (not counted toward max_restarts): agent a1 was lost"
    )
    assert allocation(clocked, old).lost
    second = connect(clocked, "a2")
    new = started_on(clocked, second, "a2")
    lose(clocked, clock, "a2")
    trial = trial_row(clocked)
    assert (trial.state, trial.restarts, trial.infra_restarts) == ("QUEUED", 0, 2)
    assert allocation(clocked, new).lost
    shown = run(clocked.reads.trial(trial.id))
    assert (shown.restarts, shown.infra_restarts) == (0, 2)
    assert [a.lost for a in shown.allocations] == [True, True]


def test_an_agent_back_without_its_trial_costs_no_restart(
    clocked: Master, clock: Clock, context: bytes
) -> None:
    submit(clocked, context, max_restarts=0)
    agent = connect(clocked, "a1")
    started_on(clocked, agent, "a1")
    run(clocked.agents.disconnected(clocked.hub.agents["a1"]))
    connect(clocked, "a1", running=[])  # restarted: its processes went with the old one
    trial = trial_row(clocked)
    assert (trial.state, trial.restarts, trial.infra_restarts) == ("QUEUED", 0, 1)


def test_an_agent_that_stops_under_its_trial_costs_no_restart(
    clocked: Master, context: bytes
) -> None:
    submit(clocked, context, max_restarts=0)
    agent = connect(clocked, "a1")
    alloc_id = started_on(clocked, agent, "a1")
    stopped = Exited(alloc_id, -15, "agent a1 stopped", lost=True)
    run(clocked.agents.on_message("a1", stopped.to_dict()))
    trial = trial_row(clocked)
    # Queued again, and given the free slot in the exit's own transaction.
    assert (trial.state, trial.restarts, trial.infra_restarts) == ("RUNNING", 0, 1)
    assert allocation(clocked, alloc_id).lost


def test_its_own_failure_still_spends_max_restarts(clocked: Master, context: bytes) -> None:
    submit(clocked, context, max_restarts=0)
    agent = connect(clocked, "a1")
    alloc_id = started_on(clocked, agent, "a1")
    run(clocked.agents.on_message("a1", Exited(alloc_id, 1).to_dict()))
    trial = trial_row(clocked)
    assert (trial.state, trial.restarts, trial.infra_restarts) == ("ERROR", 1, 0)


def test_a_copy_given_up_on_has_every_report_and_checkpoint_refused(
    clocked: Master, clock: Clock, context: bytes
) -> None:
    submit(clocked, context)
    agent = connect(clocked, "a1")
    old = started_on(clocked, agent, "a1")
    # The copy's token was checked (and kept) while its allocation lived, as a report in flight
    # across the loss would have it.
    token = agent.starts()[-1]["env"]["ASSAY_TOKEN"]
    held = run(clocked.harness.caller(token))
    lose(clocked, clock, "a1")

    with pytest.raises(Fenced, match=f"allocation {old} has ended"):
        run(clocked.harness.caller(token))
    uuid = "0b7f6d1e-3c1a-4f5e-9a57-6c1f0e3b2a11"
    with pytest.raises(Fenced):
        run(clocked.harness.report_checkpoint(held, CheckpointReport(uuid, 10, {}, {})))
    with pytest.raises(Fenced):
        run(clocked.harness.report_metrics(held, [MetricReport("training", 10, {"loss": 0.5})]))
    with pytest.raises(Fenced):
        run(clocked.harness.complete_operation(held, 100, 0.5))
    with pytest.raises(Fenced):
        run(clocked.harness.report_progress(held, 0.5))
    with pytest.raises(Fenced):
        run(clocked.harness.preemption(old, timeout=0))
    with pytest.raises(Fenced):
        run(clocked.harness.operation(held, timeout=0))
    assert clocked.db.run_sync(lambda s: s.get(Checkpoint, uuid)) is None
    assert clocked.db.run_sync(lambda s: s.scalars(select(Metric)).all()) == []
    assert trial_row(clocked).latest_checkpoint is None


def test_an_agent_back_with_a_copy_given_up_on_is_told_to_kill_it_at_once_before_anything(
    clocked: Master, clock: Clock, context: bytes
) -> None:
    submit(clocked, context)
    agent = connect(clocked, "a1")
    old = started_on(clocked, agent, "a1")
    lose(clocked, clock, "a1")
    rescuer = connect(clocked, "a2")
    started_on(clocked, rescuer, "a2")
    # The frozen machine wakes: its agent still runs the copy the master gave up on.
    back = connect(clocked, "a1", running=[old])
    assert back.sent[0] == {"type": "kill", "allocation_id": old, "fenced": True}
    assert back.sent[1]["type"] == "welcome"
    assert trial_row(clocked).state == "RUNNING", "the copy on a2 runs on"


@pytest.fixture
def restarted(
    db_url: str, tmp_path: Path, clock: Clock, context: bytes
) -> Iterator[tuple[Master, str]]:
    """A master started again after the first was killed with a trial running on agent a1,
    which has not come back; and that trial's allocation."""
    settings = MasterConfig(
        allowed_checkpoint_storage={"host_paths": [tmp_path]},
        agent_lost_after_seconds=LOST_AFTER,
    )
    db = Database(db_url)
    first = Master(settings, db, tmp_path / "home", clock)
    first.core.cluster_id = "test"
    submit(first, context)
    old = started_on(first, connect(first, "a1"), "a1")
    again = Master(settings, db, tmp_path / "home", clock)  # the first was killed
    again.core.cluster_id = "test"
    yield again, old
    db.dispose()


def test_an_agent_that_never_comes_back_to_a_restarted_master_has_its_trial_started_again(
    restarted: tuple[Master, str], clock: Clock
) -> None:
    """The restarted master knows no connection of the agent's: its first look at every live
    allocation, once the limit has passed since it started, finds the agent's trial."""
    again, old = restarted
    clock.now += LOST_AFTER - 1
    run(again.agents.reap_lost())
    assert not allocation(again, old).lost  # within the limit: it may still come back
    clock.now += 2
    run(again.agents.reap_lost())
    assert allocation(again, old).lost
    assert trial_row(again).state == "QUEUED"


def test_an_agent_still_waiting_its_turn_after_a_restart_is_not_lost_while_others_arrive(
    restarted: tuple[Master, str], clock: Clock
) -> None:
    """A large cluster's agents come back to a restarted master over a minute or more: while
    agents are still being admitted, one not back yet is not lost; once none has come back
    for the limit it is, and agents that keep arriving hold it back only so long."""
    again, old = restarted
    for step in range(2 * (SETTLE_LIMITS + 1)):
        clock.now += LOST_AFTER / 2
        connect(again, f"other-{step}")  # the storm goes on: others are still admitted
        run(again.agents.reap_lost())
        since = clock.now - again.core.started_at
        if since < (SETTLE_LIMITS + 1) * LOST_AFTER:
            assert not allocation(again, old).lost, f"lost {since} s after the restart"
    # Agents kept arriving, but no longer than the cap: the one never back is lost.
    assert allocation(again, old).lost
    assert trial_row(again).state == "QUEUED"


def test_an_agent_that_never_comes_back_is_lost_once_none_has_arrived_for_the_limit(
    restarted: tuple[Master, str], clock: Clock
) -> None:
    again, old = restarted
    clock.now += LOST_AFTER / 2
    connect(again, "other")  # the last to come back
    clock.now += LOST_AFTER - 1
    run(again.agents.reap_lost())
    assert not allocation(again, old).lost  # the limit has passed since the start only
    clock.now += 2
    run(again.agents.reap_lost())
    assert allocation(again, old).lost


def test_an_agent_lost_back_and_lost_again_has_each_of_its_trials_started_again(
    clocked: Master, clock: Clock, context: bytes
) -> None:
    submit(clocked, context, max_restarts=0)
    agent = connect(clocked, "a1")
    first = started_on(clocked, agent, "a1")
    lose(clocked, clock, "a1")
    agent = connect(clocked, "a1")  # back, without the trial
    second = started_on(clocked, agent, "a1")
    assert second != first
    run(clocked.agents.reap_lost())  # connected: nothing is lost
    assert not allocation(clocked, second).lost
    lose(clocked, clock, "a1")
    assert allocation(clocked, second).lost
    assert (trial_row(clocked).state, trial_row(clocked).infra_restarts) == ("QUEUED", 2)


def test_an_agent_whose_socket_goes_before_its_welcome_is_disconnected_and_its_trial_reaped(
    clocked: Master, clock: Clock, context: bytes
) -> None:
    submit(clocked, context)
    old = started_on(clocked, connect(clocked, "a1"), "a1")
    run(clocked.agents.disconnected(clocked.hub.agents["a1"]))

    async def gone(message: object) -> None:
        raise ConnectionError("the agent's socket closed")

    hello = {"type": "hello", "agent_id": "a1", "slots": [{"id": "0"}], "running": [old]}
    with pytest.raises(ConnectionError):
        run(clocked.agents.connected({**hello, "session": "session-of-a1"}, gone))
    assert not clocked.hub.is_connected("a1")
    clock.now += LOST_AFTER + 1
    run(clocked.agents.reap_lost())
    assert allocation(clocked, old).lost
