"""Placing the parts of a gang request (the instances of a job's task roles) on agents.

Every part goes to one agent carrying its label with the slots, cores and memory it asks for,
all parts or none. The search is first-fit-decreasing: the biggest parts first (slots, then
memory, then cores), each on the agent the fitting prefers among those it still fits on. It may
miss a placement that exists (bin packing is NP-hard), never one that overcommits an agent.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from assay.scheduler._model import Agent, Fitting, Part, Running
from assay.scheduler._room import CPU_TOLERANCE, Room, Spot


def cpu_capacity(agent: Agent) -> float:
    """The cores ``agent`` offers; unlimited when it did not say (0)."""
    return agent.cpu if agent.cpu > 0 else math.inf


def memory_capacity(agent: Agent) -> float:
    """The memory (MB) ``agent`` offers; unlimited when it did not say (0)."""
    return float(agent.memory_mb) if agent.memory_mb > 0 else math.inf


def open_room(
    agents: Sequence[Agent],
    slots: Mapping[str, Sequence[str]],
    running: Iterable[Running],
    fitting: Fitting,
) -> Room:
    """The room of the enabled ``agents`` with free ``slots``, less the cores and memory the
    ``running`` allocations hold (also those giving their slots back: they hold them until they
    exit)."""
    cpu = {a.id: cpu_capacity(a) for a in agents if a.enabled}
    memory = {a.id: memory_capacity(a) for a in agents if a.enabled}
    for alloc in running:
        for agent_id, (cores, mb) in alloc.usage.items():
            if agent_id in cpu:
                cpu[agent_id] -= cores
                memory[agent_id] -= mb
    return Room(agents, slots, cpu, memory, fitting)


def fit_parts(
    parts: Sequence[Part],
    agents: Sequence[Agent],
    free_slots: Mapping[str, Sequence[str]],
    free_cpu: Mapping[str, float],
    free_memory: Mapping[str, float],
    fitting: Fitting,
) -> list[Spot] | None:
    """Where each of ``parts`` goes, in their order: (agent id, slot ids), or None when they do
    not all fit.

    Each part goes to one enabled agent carrying its label (agents without slots take zero-slot
    parts) with enough free slots, cores and memory left by the parts placed before it. Bigger
    parts are placed first (slots, then memory, then cores); best fit packs (the agent with the
    fewest free slots that fits, then the fewest free cores), worst fit spreads.

    ``free_slots`` are the free slot ids per agent (none when missing); ``free_cpu`` and
    ``free_memory`` the cores and MB free per agent, the agent's whole capacity when missing.
    Agents that did not say their cores or memory (0) have them unlimited.
    """
    cpu: dict[str, float] = {}
    memory: dict[str, float] = {}
    for agent in agents:
        cpu[agent.id] = free_cpu.get(agent.id, agent.cpu) if agent.cpu > 0 else math.inf
        memory[agent.id] = (
            free_memory.get(agent.id, agent.memory_mb) if agent.memory_mb > 0 else math.inf
        )
    slots = {agent_id: sorted(ids) for agent_id, ids in free_slots.items()}
    return Room(agents, slots, cpu, memory, fitting).place(parts)


def never_fits(parts: Sequence[Part], agents: Sequence[Agent]) -> str | None:
    """Why ``parts`` could not all be placed even on ``agents`` with nothing running, naming
    the resource (slots, cores, memory or a label); None when nothing says they cannot.

    Checks each part against the agents that could host it alone, then what the parts need
    together against what those agents have in all. Disabled agents count (they may be enabled
    again), and a pool without agents says nothing (agents connect later). The message speaks
    of "instance" so that a caller can put the task role in front of it.
    """
    if not agents:
        return None
    for part in parts:
        why = _never_fits_alone(part, agents)
        if why is not None:
            return why
    # Parts may share agents whatever their labels, so all parts must fit on all agents, and
    # the parts of each label on the agents carrying it.
    groups: dict[str | None, list[Part]] = {None: list(parts)}
    for part in parts:
        if part.label is not None:
            groups.setdefault(part.label, []).append(part)
    for label, group in groups.items():
        why = _never_fit_together(group, _hosts(agents, label), label)
        if why is not None:
            return why
    return None


def _hosts(agents: Sequence[Agent], label: str | None) -> list[Agent]:
    return [a for a in agents if label is None or label in a.labels]


def _where(label: str | None) -> str:
    return "" if label is None else f" with label {label!r}"


def _slots(n: int) -> str:
    return f"{n} slot" if n == 1 else f"{n} slots"


def _cores(n: float) -> str:
    return f"{n:g} core" if n == 1 else f"{n:g} cores"


def _memory(n: float) -> str:
    return f"{n:g} MB of memory"


def _never_fits_alone(part: Part, agents: Sequence[Agent]) -> str | None:
    hosts = _hosts(agents, part.label)
    if not hosts:
        return f"instance needs an agent with label {part.label!r}; no agent carries it"
    where = _where(part.label)
    most_slots = max(len(a.slots) for a in hosts)
    if part.slots > most_slots:
        return f"instance needs {_slots(part.slots)}; the largest agent{where} has {most_slots}"
    most_cpu = max(cpu_capacity(a) for a in hosts)
    if part.cpu > most_cpu + CPU_TOLERANCE:
        return f"instance needs {_cores(part.cpu)}; the largest agent{where} has {most_cpu:g}"
    most_memory = max(memory_capacity(a) for a in hosts)
    if part.memory_mb > most_memory:
        return (
            f"instance needs {_memory(part.memory_mb)}; "
            f"the largest agent{where} has {most_memory:g} MB"
        )
    if any(_holds(a, part) for a in hosts):
        return None
    needs = [_slots(part.slots)]
    if part.cpu:
        needs.append(_cores(part.cpu))
    if part.memory_mb:
        needs.append(_memory(part.memory_mb))
    both = " and ".join([", ".join(needs[:-1]), needs[-1]])
    return f"instance needs {both} on one agent; no agent{where} has all of them"


def _holds(agent: Agent, part: Part) -> bool:
    return (
        len(agent.slots) >= part.slots
        and cpu_capacity(agent) + CPU_TOLERANCE >= part.cpu
        and memory_capacity(agent) >= part.memory_mb
    )


def _never_fit_together(
    parts: Sequence[Part], hosts: Sequence[Agent], label: str | None
) -> str | None:
    where = _where(label)
    n = len(parts)
    need_slots = sum(p.slots for p in parts)
    have_slots = sum(len(a.slots) for a in hosts)
    if need_slots > have_slots:
        return (
            f"{n} instances need {_slots(need_slots)} together; "
            f"the agents{where} have {have_slots} in all"
        )
    need_cpu = sum(p.cpu for p in parts)
    have_cpu = sum(cpu_capacity(a) for a in hosts)
    if need_cpu > have_cpu + CPU_TOLERANCE * n:
        return (
            f"{n} instances need {_cores(need_cpu)} together; "
            f"the agents{where} have {have_cpu:g} in all"
        )
    need_memory = sum(p.memory_mb for p in parts)
    have_memory = sum(memory_capacity(a) for a in hosts)
    if need_memory > have_memory:
        return (
            f"{n} instances need {_memory(need_memory)} together; "
            f"the agents{where} have {have_memory:g} MB in all"
        )
    return None
