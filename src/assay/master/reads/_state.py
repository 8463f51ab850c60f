"""The cluster's state as a Prometheus scrape shows it (:class:`ClusterState`): agents and
slots by pool and state, each pool's queue, the database's connections. Read when the scrape
asks, from what the API's own listings read, so the figures agree with them."""

from __future__ import annotations

from collections.abc import Sequence

from assay import rest
from assay.master.kernel import ClusterState, zeros
from assay.protocol import JobState

AGENT_STATES = ("connected", "disabled", "disconnected")
SLOT_STATES = ("allocated", "free", "disabled")
JOB_STATES = ("queued", "scheduled", "running")


def cluster_state(
    pools: Sequence[str],
    agents: rest.AgentList,
    queues: Sequence[rest.JobQueue],
    connections: dict[str, int],
    now: float,
) -> ClusterState:
    """The state of ``pools`` from the agents' listing and each pool's job queue;
    ``connections``: the master's database connections by state."""
    by_agent = zeros(pools, AGENT_STATES)
    by_slot = zeros(pools, SLOT_STATES)
    for agent in agents.agents:
        state = (
            "disconnected" if not agent.connected else "connected" if agent.enabled else "disabled"
        )
        by_agent[(agent.pool, state)] = by_agent.get((agent.pool, state), 0) + 1
        if not agent.connected:
            continue  # a disconnected agent's slots are no one's to use
        for slot in agent.slots:
            kind = "allocated" if slot.allocated else "free" if agent.enabled else "disabled"
            by_slot[(agent.pool, kind)] = by_slot.get((agent.pool, kind), 0) + 1
    by_job = zeros(pools, JOB_STATES)
    oldest = dict.fromkeys(pools, 0.0)
    for queue in queues:
        name = queue.resource_pool
        for job in queue.jobs:
            key = (name, job.status.value.lower())
            by_job[key] = by_job.get(key, 0) + 1
            if job.status == JobState.QUEUED:
                oldest[name] = max(oldest.get(name, 0.0), now - job.submitted_at)
    return ClusterState(by_agent, by_slot, by_job, oldest, connections)
