"""What a scrape says of the cluster: agents and slots by pool and state (a disconnected
agent's slots are no one's), the queue by state and its longest wait, every state shown even
at 0."""

from __future__ import annotations

from assay import rest
from assay.master.reads._state import cluster_state
from assay.protocol import JobState


def _agent(agent_id: str, *, connected: bool = True, enabled: bool = True) -> rest.Agent:
    slots = [
        rest.AgentSlot(id=str(i), type="cpu", allocated=(i == 0 and connected)) for i in range(2)
    ]
    return rest.Agent(
        id=agent_id,
        pool="default",
        labels=[],
        enabled=enabled,
        connected=connected,
        address="",
        version="",
        slots=slots,
        registered_at=0.0,
        last_seen=0.0,
        container_runtime="",
    )


def _job(status: JobState, submitted_at: float) -> rest.Job:
    return rest.Job.model_construct(status=status, submitted_at=submitted_at)


def test_agents_slots_and_the_queue_by_pool_and_state() -> None:
    agents = rest.AgentList(
        agents=[_agent("a"), _agent("b", enabled=False), _agent("c", connected=False)]
    )
    queue = rest.JobQueue.model_construct(
        resource_pool="default",
        jobs=[
            _job(JobState.RUNNING, 10.0),
            _job(JobState.QUEUED, 40.0),
            _job(JobState.QUEUED, 70.0),
        ],
    )
    state = cluster_state(["default", "gpu"], agents, [queue], {"checked_out": 1}, now=100.0)
    assert state.agents[("default", "connected")] == 1
    assert state.agents[("default", "disabled")] == 1
    assert state.agents[("default", "disconnected")] == 1
    # a: one allocated, one free; b (disabled): one allocated, one disabled; c: none counted.
    assert state.slots[("default", "allocated")] == 2
    assert state.slots[("default", "free")] == 1
    assert state.slots[("default", "disabled")] == 1
    assert state.jobs[("default", "queued")] == 2
    assert state.jobs[("default", "running")] == 1
    assert state.oldest_wait["default"] == 60.0
    # A pool with nothing in it shows every state at 0.
    assert state.agents[("gpu", "connected")] == 0
    assert state.jobs[("gpu", "scheduled")] == 0
    assert state.oldest_wait["gpu"] == 0.0
    assert state.db_connections == {"checked_out": 1}
