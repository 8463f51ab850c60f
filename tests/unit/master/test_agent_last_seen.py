"""``assay agent list``'s "Seen" is when the master last heard from the agent: each heartbeat
(or any message) moves it, kept in memory from the live connection; the database keeps the
times it connected and disconnected."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.config import MasterConfig
from assay.db import Database
from assay.master import Master
from assay.protocol import Heartbeat
from tests.unit.master.support import Clock, Recorder, run


@pytest.fixture
def clock() -> Clock:
    return Clock(1000.0)


@pytest.fixture
def clocked(db_url: str, tmp_path: Path, clock: Clock) -> Iterator[Master]:
    db = Database(db_url)
    m = Master(MasterConfig(), db, tmp_path / "home", clock)
    m.core.cluster_id = "test"
    yield m
    db.dispose()


def _seen(master: Master) -> float:
    (agent,) = run(master.reads.agents()).agents
    return agent.last_seen


def test_a_heartbeat_moves_last_seen_and_disconnecting_keeps_the_last_time(
    clocked: Master, clock: Clock
) -> None:
    hello = {"type": "hello", "agent_id": "a1", "slots": [{"id": "0"}]}
    conn, _ = run(clocked.pools.join(hello, Recorder()))
    assert _seen(clocked) == 1000.0

    clock.now = 1015.0
    run(clocked.agents.on_message("a1", Heartbeat()))
    assert _seen(clocked) == 1015.0
    clock.now = 1020.0
    run(clocked.agents.on_message("a1", Heartbeat().to_dict()))
    assert _seen(clocked) == 1020.0

    clock.now = 1030.0
    run(clocked.agents.disconnected(conn))
    clock.now = 1100.0
    assert _seen(clocked) == 1030.0
