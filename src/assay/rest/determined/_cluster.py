"""The cluster as Determined's clients read it: resource pools (``GET /api/v1/resource-pools``,
which ``det job list`` reads for the pool's scheduler), agents and their slots (``det agent
list``, ``det slot list``: ``GET /api/v1/agents``) and the live allocations (``det task list``:
``GET /api/v1/tasks``).

A slot an allocation holds shows that allocation as its container (assay runs processes, in a
container only where the agent has a runtime): the container's id is the allocation's id, so
``det slot list`` names the task holding each slot."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from enum import StrEnum

from pydantic import Field

from assay import rest
from assay.rest.determined._common import DetResource, Pagination, timestamp


class DeviceType(StrEnum):
    """``devicev1Type``."""

    UNSPECIFIED = "TYPE_UNSPECIFIED"
    CPU = "TYPE_CPU"
    CUDA = "TYPE_CUDA"
    ROCM = "TYPE_ROCM"


class Device(DetResource):
    """``v1Device``: the device behind a slot."""

    id: int | None = None
    brand: str | None = None
    uuid: str | None = None
    type: DeviceType | None = None


class ContainerState(StrEnum):
    """``containerv1State``."""

    UNSPECIFIED = "STATE_UNSPECIFIED"
    ASSIGNED = "STATE_ASSIGNED"
    PULLING = "STATE_PULLING"
    STARTING = "STATE_STARTING"
    RUNNING = "STATE_RUNNING"
    TERMINATED = "STATE_TERMINATED"


class Container(DetResource):
    """``v1Container``: what runs on an agent's slots; here, a live allocation."""

    id: str = Field(description="The allocation's id.")
    state: ContainerState
    parent: str | None = None
    devices: list[Device] = Field(default_factory=list)


class Slot(DetResource):
    """``v1Slot``."""

    id: str
    device: Device
    enabled: bool
    draining: bool = False
    container: Container | None = None


class DeviceStats(DetResource):
    """``v1DeviceStats``: the slots of one type (or brand) of an agent."""

    disabled: int
    draining: int
    total: int
    states: dict[str, int] = Field(default_factory=dict)


class SlotStats(DetResource):
    """``v1SlotStats``: an agent's slots counted by device type and by brand."""

    type_stats: dict[str, DeviceStats]
    brand_stats: dict[str, DeviceStats]


class Agent(DetResource):
    """``v1Agent``: a connected agent."""

    id: str
    registered_time: str
    slots: dict[str, Slot]
    containers: dict[str, Container]
    resource_pools: list[str]
    enabled: bool
    draining: bool = False
    addresses: list[str]
    version: str
    slot_stats: SlotStats


class GetAgentsResponse(DetResource):
    """``GET /api/v1/agents``."""

    agents: list[Agent]
    pagination: Pagination


class GetAgentResponse(DetResource):
    """``GET /api/v1/agents/{agentId}``."""

    agent: Agent


class GetSlotsResponse(DetResource):
    """``GET /api/v1/agents/{agentId}/slots``."""

    slots: list[Slot]


class GetSlotResponse(DetResource):
    """``GET /api/v1/agents/{agentId}/slots/{slotId}``."""

    slot: Slot


class SchedulerType(StrEnum):
    """``v1SchedulerType``: assay's pools use the priority or the fair-share scheduler."""

    UNSPECIFIED = "SCHEDULER_TYPE_UNSPECIFIED"
    PRIORITY = "SCHEDULER_TYPE_PRIORITY"
    FAIR_SHARE = "SCHEDULER_TYPE_FAIR_SHARE"
    ROUND_ROBIN = "SCHEDULER_TYPE_ROUND_ROBIN"
    KUBERNETES = "SCHEDULER_TYPE_KUBERNETES"
    SLURM = "SCHEDULER_TYPE_SLURM"
    PBS = "SCHEDULER_TYPE_PBS"


class FittingPolicy(StrEnum):
    """``v1FittingPolicy``."""

    UNSPECIFIED = "FITTING_POLICY_UNSPECIFIED"
    BEST = "FITTING_POLICY_BEST"
    WORST = "FITTING_POLICY_WORST"
    KUBERNETES = "FITTING_POLICY_KUBERNETES"
    SLURM = "FITTING_POLICY_SLURM"
    PBS = "FITTING_POLICY_PBS"


class ResourcePoolType(StrEnum):
    """``v1ResourcePoolType``."""

    UNSPECIFIED = "RESOURCE_POOL_TYPE_UNSPECIFIED"
    AWS = "RESOURCE_POOL_TYPE_AWS"
    GCP = "RESOURCE_POOL_TYPE_GCP"
    STATIC = "RESOURCE_POOL_TYPE_STATIC"
    K8S = "RESOURCE_POOL_TYPE_K8S"


class PrioritySchedulerDetail(DetResource):
    """``v1ResourcePoolPrioritySchedulerDetail``."""

    preemption: bool
    default_priority: int


class ResourcePoolDetail(DetResource):
    """``v1ResourcePoolDetail``: only a priority pool has details here (no cloud's)."""

    priority_scheduler: PrioritySchedulerDetail | None = None


class ResourcePool(DetResource):
    """``v1ResourcePool``. Machine images, startup scripts and the like are Determined's
    provisioner's: an assay pool has none of them (empty)."""

    name: str
    description: str
    type: ResourcePoolType
    num_agents: int
    slots_available: int = Field(description="Slots of its connected agents.")
    slots_used: int = Field(description="Of those, the slots live allocations hold.")
    slot_type: DeviceType
    aux_container_capacity: int = 0
    aux_containers_running: int = 0
    default_compute_pool: bool
    default_aux_pool: bool
    preemptible: bool = Field(default=False, description="Spot instances (assay has none).")
    min_agents: int = 0
    max_agents: int = 0
    slots_per_agent: int | None = None
    aux_container_capacity_per_agent: int = 0
    scheduler_type: SchedulerType
    scheduler_fitting_policy: FittingPolicy
    location: str = ""
    image_id: str = ""
    instance_type: str = ""
    master_url: str = ""
    master_cert_name: str = ""
    startup_script: str = ""
    container_startup_script: str = ""
    agent_docker_network: str = ""
    agent_docker_runtime: str = ""
    agent_docker_image: str = ""
    agent_fluent_image: str = ""
    max_idle_agent_period: float = 0.0
    max_agent_starting_period: float = 0.0
    details: ResourcePoolDetail
    accelerator: str | None = None
    cluster_name: str
    resource_manager_metadata: dict[str, str] = Field(default_factory=dict)


class GetResourcePoolsResponse(DetResource):
    """``GET /api/v1/resource-pools``."""

    resource_pools: list[ResourcePool]
    pagination: Pagination


class ResourcesSummaryDevices(DetResource):
    """The devices an allocation holds on one agent."""

    devices: list[Device]


class ResourcesSummary(DetResource):
    """``v1ResourcesSummary``: an allocation's share of one agent."""

    resources_id: str
    resources_type: str = "agent"
    allocation_id: str
    agent_devices: dict[str, ResourcesSummaryDevices]
    container_id: str | None = None


class AllocationSummary(DetResource):
    """``v1AllocationSummary``: a live allocation, as ``det task list`` shows it."""

    task_id: str
    allocation_id: str
    name: str
    registered_time: str
    resource_pool: str
    slots_needed: int
    resources: list[ResourcesSummary]
    scheduler_type: str = Field(description="priority or fair_share, as the pool's config.")
    priority: int
    proxy_ports: list[dict[str, object]] = Field(default_factory=list)


class GetTasksResponse(DetResource):
    """``GET /api/v1/tasks``: the live allocations by id."""

    allocation_id_to_summary: dict[str, AllocationSummary]


_DEVICE_TYPES = {"cpu": DeviceType.CPU, "cuda": DeviceType.CUDA, "rocm": DeviceType.ROCM}


def device_type(kind: str) -> DeviceType:
    """A slot's type (``cuda``, ``cpu``) as Determined names it."""
    return _DEVICE_TYPES.get(kind.lower(), DeviceType.UNSPECIFIED)


def det_device(slot: rest.AgentSlot) -> Device:
    """The device behind one of an agent's slots; Determined numbers devices, assay names
    slots (its ids are numbers unless an agent was given others)."""
    return Device(
        id=int(slot.id) if slot.id.isdecimal() else None,
        brand=slot.name or slot.type.upper(),
        uuid=slot.uuid or None,
        type=device_type(slot.type),
    )


def _stats(slots: Iterable[Slot], key: str, enabled: bool) -> dict[str, DeviceStats]:
    counts: dict[str, int] = {}
    for slot in slots:
        name = str(getattr(slot.device, key) or "")
        counts[name] = counts.get(name, 0) + 1
    return {
        name: DeviceStats(disabled=0 if enabled else n, draining=0, total=n)
        for name, n in counts.items()
    }


def det_agent(agent: rest.Agent, running: Sequence[tuple[Container, Collection[str]]]) -> Agent:
    """A connected agent as ``v1Agent``; ``running``: each container (live allocation) on it,
    with the ids of the slots it holds there (none for work that runs beside the slots)."""
    holder = {slot_id: c for c, slot_ids in running for slot_id in slot_ids}
    slots = {
        s.id: Slot(id=s.id, device=det_device(s), enabled=agent.enabled, container=holder.get(s.id))
        for s in agent.slots
    }
    return Agent(
        id=agent.id,
        registered_time=timestamp(agent.registered_at),
        slots=slots,
        containers={c.id: c for c, _ in running},
        resource_pools=[agent.pool],
        enabled=agent.enabled,
        addresses=[agent.address] if agent.address else [],
        version=agent.version,
        slot_stats=SlotStats(
            type_stats=_stats(slots.values(), "type", agent.enabled),
            brand_stats=_stats(slots.values(), "brand", agent.enabled),
        ),
    )
