"""Determined's view of the cluster: resource pools (read by ``det job list`` for each pool's
scheduler), agents and slots (``det agent list``, ``det slot list``) and the live allocations
(``det task list``), from assay's own reads of them.

Agents are listed while connected, as Determined's master lists them. assay has no command
that enables or disables an agent or a slot: those requests are refused, saying what does the
same here."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from enum import StrEnum
from typing import Annotated

from fastapi import Path, Query

from assay import rest
from assay.api._deps import MasterDep
from assay.api.determined._base import Limit, Offset, signed_router
from assay.api.determined._routes import CLUSTER_NAME
from assay.config import MasterConfig, ResourcePoolConfig
from assay.errors import InvalidRequest, NotFound
from assay.master import Master
from assay.master.reads import LiveAllocation
from assay.rest import determined as det

router = signed_router()

AgentId = Annotated[str, Path(max_length=128, pattern=rest.NO_NUL)]
SlotId = Annotated[str, Path(max_length=128, pattern=rest.NO_NUL)]


class AgentSort(StrEnum):
    """``v1GetAgentsRequestSortBy``."""

    UNSPECIFIED = "SORT_BY_UNSPECIFIED"
    ID = "SORT_BY_ID"
    TIME = "SORT_BY_TIME"


@router.get("/api/v1/resource-pools")
async def resource_pools(
    master: MasterDep, offset: Offset = 0, limit: Limit = 0
) -> det.GetResourcePoolsResponse:
    """The configured pools, in the master config's order, with their connected agents."""
    agents = await master.reads.agents()
    pools = [det_pool(p, master.settings, agents.agents) for p in master.settings.resource_pools]
    page = det.paginate(len(pools), offset, limit)
    return det.GetResourcePoolsResponse(
        resource_pools=pools[page.start_index : page.end_index], pagination=page
    )


@router.get("/api/v1/agents")
async def agents(
    master: MasterDep,
    sort_by: Annotated[AgentSort, Query(alias="sortBy")] = AgentSort.UNSPECIFIED,
    order_by: Annotated[det.OrderBy, Query(alias="orderBy")] = det.OrderBy.ASC,
    offset: Offset = 0,
    limit: Limit = 0,
    label: Annotated[str | None, Query(max_length=256, pattern=rest.NO_NUL)] = None,
    exclude_slots: Annotated[bool, Query(alias="excludeSlots")] = False,
    exclude_containers: Annotated[bool, Query(alias="excludeContainers")] = False,
) -> det.GetAgentsResponse:
    """``det agent list``, ``det slot list``: the connected agents (with ``label`` when given),
    by id (``SORT_BY_TIME``: by when each registered), paged."""
    shown = await _connected(master)
    if label is not None:
        shown = [(a, d) for a, d in shown if label in a.labels]
    if sort_by is AgentSort.TIME:
        shown.sort(key=lambda ad: (ad[0].registered_at, ad[0].id))
    if order_by is det.OrderBy.DESC:
        shown.reverse()
    page = det.paginate(len(shown), offset, limit)
    left_out: dict[str, object] = {}
    if exclude_slots:
        left_out["slots"] = {}
    if exclude_containers:
        left_out["containers"] = {}
    out = [a.model_copy(update=left_out) for _, a in shown[page.start_index : page.end_index]]
    return det.GetAgentsResponse(agents=out, pagination=page)


@router.get("/api/v1/agents/{agent_id}")
async def agent(agent_id: AgentId, master: MasterDep) -> det.GetAgentResponse:
    return det.GetAgentResponse(agent=await _agent(master, agent_id))


@router.get("/api/v1/agents/{agent_id}/slots")
async def slots(agent_id: AgentId, master: MasterDep) -> det.GetSlotsResponse:
    return det.GetSlotsResponse(slots=list((await _agent(master, agent_id)).slots.values()))


@router.get("/api/v1/agents/{agent_id}/slots/{slot_id}")
async def slot(agent_id: AgentId, slot_id: SlotId, master: MasterDep) -> det.GetSlotResponse:
    found = (await _agent(master, agent_id)).slots.get(slot_id)
    if found is None:
        raise NotFound(f"agent {agent_id} has no slot {slot_id}; `det slot list` shows its slots")
    return det.GetSlotResponse(slot=found)


@router.post("/api/v1/agents/{agent_id}/enable")
async def enable_agent(agent_id: AgentId) -> det.GetAgentResponse:
    """``det agent enable``: refused, as assay has no such command."""
    raise InvalidRequest(
        f"agent {agent_id} cannot be enabled: assay has no command that enables or disables "
        "an agent; a connected agent's slots are always in its pool (`det agent list`)"
    )


@router.post("/api/v1/agents/{agent_id}/disable")
async def disable_agent(agent_id: AgentId) -> det.GetAgentResponse:
    """``det agent disable`` (``--drain`` too): refused, as assay has no such command."""
    raise InvalidRequest(
        f"agent {agent_id} cannot be disabled: assay has no command that enables or disables "
        "an agent; stop the agent's process to take its slots out of its pool"
    )


@router.post("/api/v1/agents/{agent_id}/slots/{slot_id}/enable")
@router.post("/api/v1/agents/{agent_id}/slots/{slot_id}/disable")
async def toggle_slot(agent_id: AgentId, slot_id: SlotId) -> det.GetSlotResponse:
    """``det slot enable|disable``: refused, as assay has no such command."""
    raise InvalidRequest(
        f"slot {slot_id} of agent {agent_id} cannot be enabled or disabled: assay has no "
        "command for it; start the agent with the slots it should offer (`assay agent "
        "--slots N`)"
    )


@router.get("/api/v1/tasks")
async def tasks(master: MasterDep) -> det.GetTasksResponse:
    """``det task list``: every allocation starting or running, trials' and jobs' alike."""
    live = await master.reads.live_allocations()
    schedulers = {p.pool_name: p.scheduler.type for p in master.settings.resource_pools}
    return det.GetTasksResponse(
        allocation_id_to_summary={a.id: det_allocation(a, schedulers.get(a.pool, "")) for a in live}
    )


async def _connected(master: Master) -> list[tuple[rest.Agent, det.Agent]]:
    """The connected agents by id, each as assay and as Determined shows it."""
    listed = await master.reads.agents()
    live = await master.reads.live_allocations()
    connected = sorted((a for a in listed.agents if a.connected), key=lambda a: a.id)
    return [(a, det.det_agent(a, containers(a, live))) for a in connected]


async def _agent(master: Master, agent_id: str) -> det.Agent:
    for listed, shown in await _connected(master):
        if listed.id == agent_id:
            return shown
    raise NotFound(
        f"agent {agent_id} is not connected; `det agent list` shows the connected agents"
    )


def containers(
    agent: rest.Agent, live: Sequence[LiveAllocation]
) -> list[tuple[det.Container, Collection[str]]]:
    """The live allocations on ``agent`` as the containers Determined's agents list, each with
    the ids of the slots it holds there."""
    by_id = {s.id: s for s in agent.slots}
    out: list[tuple[det.Container, Collection[str]]] = []
    for alloc in live:
        if agent.id not in alloc.slots:
            continue
        held = alloc.slots[agent.id]
        state = det.ContainerState.RUNNING if alloc.started else det.ContainerState.STARTING
        devices = [det.det_device(by_id[s]) for s in held if s in by_id]
        out.append((det.Container(id=alloc.id, state=state, devices=devices), held))
    return out


def det_allocation(alloc: LiveAllocation, scheduler: str) -> det.AllocationSummary:
    """A live allocation as ``det task list`` shows it; its task is the trial (``trial-4``)
    or the job (``job-7``, as ``assay job`` commands take it) it runs."""
    task = f"trial-{alloc.trial_id}" if alloc.trial_id is not None else f"job-{alloc.task_id}"
    resources = [
        det.ResourcesSummary(
            resources_id=f"{alloc.id}-{agent_id}",
            allocation_id=alloc.id,
            agent_devices={
                agent_id: det.ResourcesSummaryDevices(
                    devices=[det.Device(id=int(s) if s.isdecimal() else None) for s in held]
                )
            },
            container_id=alloc.id,
        )
        for agent_id, held in alloc.slots.items()
    ]
    return det.AllocationSummary(
        task_id=task,
        allocation_id=alloc.id,
        name=alloc.name,
        registered_time=det.timestamp(alloc.created_at),
        resource_pool=alloc.pool,
        slots_needed=sum(len(held) for held in alloc.slots.values()),
        resources=resources,
        scheduler_type=scheduler,
        priority=alloc.priority,
    )


_SCHEDULERS = {"priority": det.SchedulerType.PRIORITY, "fair_share": det.SchedulerType.FAIR_SHARE}
_FITTING = {"best": det.FittingPolicy.BEST, "worst": det.FittingPolicy.WORST}


def det_pool(
    pool: ResourcePoolConfig, settings: MasterConfig, agents: Sequence[rest.Agent]
) -> det.ResourcePool:
    """A configured pool as ``v1ResourcePool``, with its connected agents' slots; an
    autoscaled pool's bounds are its provider's instances."""
    members = [a for a in agents if a.connected and a.pool == pool.pool_name]
    slots = [s for a in members for s in a.slots]
    types = {det.device_type(s.type) for s in slots}
    slot_type = next(
        (t for t in (det.DeviceType.CUDA, det.DeviceType.ROCM) if t in types), det.DeviceType.CPU
    )
    scheduler = pool.scheduler
    provider = pool.provider
    priority = (
        det.PrioritySchedulerDetail(
            preemption=scheduler.preemption, default_priority=scheduler.default_priority
        )
        if scheduler.type == "priority"
        else None
    )
    return det.ResourcePool(
        name=pool.pool_name,
        description=pool.description,
        type=det.ResourcePoolType.K8S if pool.type == "kubernetes" else det.ResourcePoolType.STATIC,
        num_agents=len(members),
        slots_available=len(slots),
        slots_used=sum(1 for s in slots if s.allocated),
        slot_type=slot_type,
        default_compute_pool=pool.pool_name == settings.default_compute_pool,
        default_aux_pool=pool.pool_name == settings.default_aux_pool,
        min_agents=provider.min_instances if provider else 0,
        max_agents=provider.max_instances if provider else 0,
        slots_per_agent=provider.slots_per_instance if provider else None,
        scheduler_type=_SCHEDULERS[scheduler.type],
        scheduler_fitting_policy=_FITTING[scheduler.fitting_policy],
        max_idle_agent_period=provider.idle_timeout if provider else 0.0,
        max_agent_starting_period=provider.startup_timeout if provider else 0.0,
        details=det.ResourcePoolDetail(priority_scheduler=priority),
        cluster_name=CLUSTER_NAME,
    )
