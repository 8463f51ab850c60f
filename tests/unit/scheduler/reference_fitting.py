"""The gang fitting the scheduler had before it was indexed: every part scans every agent.

Kept as the reference the indexed :class:`assay.scheduler._room.Room` is held to: the same
pools must get the same decisions from both."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from assay.scheduler import Agent, Fitting, Part, Request, Running
from assay.scheduler._pass import Pass

Spot = tuple[str, tuple[str, ...]]

CPU_TOLERANCE = 1e-9


class ScanRoom:
    """Free slots, cores and memory of the enabled agents; each part scans them all."""

    def __init__(
        self,
        agents: Sequence[Agent],
        slots: Mapping[str, Sequence[str]],
        cpu: dict[str, float],
        memory: dict[str, float],
    ) -> None:
        self.agents = [a for a in agents if a.enabled]
        self.slots = slots
        self.cpu = cpu
        self.memory = memory

    def place(self, parts: Sequence[Part], fitting: Fitting) -> list[Spot] | None:
        n = len(parts)
        order = sorted(
            range(n), key=lambda i: (-parts[i].slots, -parts[i].memory_mb, -parts[i].cpu, i)
        )
        best = fitting is Fitting.BEST
        used: dict[str, int] = {}
        used_cpu: dict[str, float] = {}
        used_memory: dict[str, float] = {}
        spots: list[Spot | None] = [None] * n
        for i in order:
            part = parts[i]
            chosen: str | None = None
            chosen_key: tuple[float, float, float, str] | None = None
            for agent in self.agents:
                if part.label is not None and part.label not in agent.labels:
                    continue
                agent_id = agent.id
                free = len(self.slots.get(agent_id, ())) - used.get(agent_id, 0)
                if free < part.slots:
                    continue
                cpu = self.cpu[agent_id] - used_cpu.get(agent_id, 0.0)
                if cpu + CPU_TOLERANCE < part.cpu:
                    continue
                memory = self.memory[agent_id] - used_memory.get(agent_id, 0.0)
                if memory < part.memory_mb:
                    continue
                key = (free, cpu, memory, agent_id) if best else (-free, -cpu, -memory, agent_id)
                if chosen_key is None or key < chosen_key:
                    chosen, chosen_key = agent_id, key
            if chosen is None:
                return None
            start = used.get(chosen, 0)
            spots[i] = (chosen, tuple(self.slots[chosen][start : start + part.slots]))
            used[chosen] = start + part.slots
            used_cpu[chosen] = used_cpu.get(chosen, 0.0) + part.cpu
            used_memory[chosen] = used_memory.get(chosen, 0.0) + part.memory_mb
        return [spot for spot in spots if spot is not None]

    def take(self, parts: Sequence[Part], spots: Sequence[Spot]) -> None:
        for part, (agent_id, _) in zip(parts, spots, strict=True):
            self.cpu[agent_id] -= part.cpu
            self.memory[agent_id] -= part.memory_mb


def _capacity(value: float) -> float:
    return float(value) if value > 0 else math.inf


def open_scan_room(
    agents: Sequence[Agent], slots: Mapping[str, Sequence[str]], running: Iterable[Running]
) -> ScanRoom:
    cpu = {a.id: _capacity(a.cpu) for a in agents if a.enabled}
    memory = {a.id: _capacity(a.memory_mb) for a in agents if a.enabled}
    for alloc in running:
        for agent_id, (cores, mb) in alloc.usage.items():
            if agent_id in cpu:
                cpu[agent_id] -= cores
                memory[agent_id] -= mb
    return ScanRoom(agents, slots, cpu, memory)


def scan_fit_parts(
    parts: Sequence[Part],
    agents: Sequence[Agent],
    free_slots: Mapping[str, Sequence[str]],
    free_cpu: Mapping[str, float],
    free_memory: Mapping[str, float],
    fitting: Fitting,
) -> list[Spot] | None:
    """:func:`assay.scheduler.fit_parts` by scanning."""
    cpu: dict[str, float] = {}
    memory: dict[str, float] = {}
    for agent in agents:
        cpu[agent.id] = free_cpu.get(agent.id, agent.cpu) if agent.cpu > 0 else math.inf
        memory[agent.id] = (
            free_memory.get(agent.id, agent.memory_mb) if agent.memory_mb > 0 else math.inf
        )
    slots = {agent_id: sorted(ids) for agent_id, ids in free_slots.items()}
    return ScanRoom(agents, slots, cpu, memory).place(parts, fitting)


def scan_start_gang(self: Pass, req: Request) -> bool:
    """``Pass.start_gang`` as it was, on a :class:`ScanRoom` (kept beside the pass, so the pass
    has no indexed room to keep up to date)."""
    room = vars(self).get("scan_room")
    if room is None:
        avail = self.state.avail
        slots = {a.id: avail.get(a.id, []) for a in self.pool.agents if a.enabled}
        room = vars(self)["scan_room"] = open_scan_room(self.pool.agents, slots, self.pool.running)
    spots = room.place(req.parts, self.pool.fitting)
    if spots is None:
        return False
    room.take(req.parts, spots)
    union: dict[str, list[str]] = {}
    for agent_id, slot_ids in spots:
        union.setdefault(agent_id, []).extend(slot_ids)
    placement = {agent_id: tuple(sorted(ids)) for agent_id, ids in union.items()}
    taken = {agent_id: ids for agent_id, ids in placement.items() if ids}
    if taken:
        self.state.take(taken)
    self.assign[req.id] = placement
    self.parts[req.id] = tuple(spots)
    self.held[req.job_id] = self.held.get(req.job_id, 0) + req.slots
    return True
