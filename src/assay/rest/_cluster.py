"""The cluster: the master itself, its agents and its resource pools."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from assay.protocol import InstanceState
from assay.rest._common import Request, Resource


class MasterInfo(Resource):
    version: str
    commit: str | None = Field(
        default=None, description="The commit the master was built from, where it is known."
    )
    cluster_id: str
    started_at: float
    database: str = Field(description="sqlite or postgresql.")
    max_grid_points: int | None = Field(
        default=None,
        description="The most points a grid search may have here (`limits.max_grid_points`); "
        "clients check a config against it before they upload its context.",
    )


class AgentSlot(Resource):
    id: str
    type: str = Field(description="cuda for a GPU, cpu for a CPU slot.")
    uuid: str = ""
    name: str = ""
    allocated: bool = Field(description="A live allocation holds it.")


class Agent(Resource):
    id: str
    pool: str
    labels: list[str]
    enabled: bool
    connected: bool
    address: str
    version: str
    slots: list[AgentSlot]
    registered_at: float
    last_seen: float
    container_runtime: str
    """The runtime it runs containers with (podman or docker); empty: none."""


class AgentList(Resource):
    agents: list[Agent]


class Instance(Resource):
    """A machine an autoscaling provider launched for a pool."""

    id: str
    pool: str
    state: InstanceState
    launched_at: float
    idle_since: float | None
    ended_at: float | None
    message: str


class ResourcePool(Resource):
    name: str
    description: str
    scheduler: str = Field(description="priority or fair_share.")
    preemption: bool
    agents: int = Field(description="Connected agents.")
    slots: int = Field(description="Slots of the connected agents.")
    instances: list[Instance] = Field(description="Machines its provider launched, if any.")


class ResourcePoolList(Resource):
    resource_pools: list[ResourcePool]


class MasterConfigView(Resource):
    """The settings the running master uses (defaults filled in), every secret masked."""

    config: dict[str, Any]


class MasterLogLine(Resource):
    id: int = Field(description="Increasing; ask for lines after the last one seen.")
    time: float = Field(description="Seconds since the epoch.")
    level: str
    line: str


class MasterLogPage(Resource):
    lines: list[MasterLogLine] = Field(description="Oldest first.")


DRAIN_WAIT_MAX = 60.0
"""The longest one ``POST /master/drain`` waits for trials to exit; a longer grace asks again."""


class DrainRequest(Request):
    wait_seconds: float = Field(
        default=0.0,
        ge=0.0,
        le=DRAIN_WAIT_MAX,
        description="How long to wait for the running trials to checkpoint and exit before "
        "answering.",
    )


class DrainStatus(Resource):
    """The cluster is being stopped: nothing new starts, and every running trial was asked to
    checkpoint and exit (it is queued again, with no restart counted, and resumes from its
    latest checkpoint when a master starts)."""

    running_trials: list[int] = Field(description="The trials whose processes have not exited yet.")
