"""What enabled agents have free for gangs (slots, cores, memory), indexed for placing parts.

Placing one part means finding, among the agents carrying its label with enough free slots,
cores and memory, the one the fitting prefers: best fit the smallest (free slots, cores, memory,
id), worst fit the largest (ties to the smallest id). Scanning every agent for every part makes a
pass with a thousand gangs on a thousand agents cost a second, so the room keeps, per label, the
agents bucketed by free slot count and each bucket sorted by (cores, memory, id) (negated for
worst fit): a part reads one bucket per slot count and finds the first agent with enough cores by
bisection. The values indexed are exactly those a scan would compute (the parts placed so far in
a gang are subtracted the same way), so the choice is the same agent.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterable, Mapping, Sequence

from assay.scheduler._model import Agent, Fitting, Part

Spot = tuple[str, tuple[str, ...]]
"""Where one part goes: the agent id and the slot ids it takes there."""

CPU_TOLERANCE = 1e-9
"""Cores are floats: parts of 0.1 and 0.2 cores fit on 0.3 free cores."""

_Key = tuple[float, float, str]
"""(cores, memory, id) of an agent, both numbers negated for worst fit."""


class _View:
    """The agents carrying one label (or all agents): ``buckets[c]`` holds the sorted keys of
    those with ``c`` free slots."""

    __slots__ = ("buckets", "label")

    def __init__(self, label: str | None, top: int) -> None:
        self.label = label
        self.buckets: list[list[_Key]] = [[] for _ in range(top + 1)]


class Room:
    """Free slots, cores and memory of the enabled agents (unlimited as inf) for one pass.

    The slot lists may be shared with whoever else hands slots out (the pass's
    :class:`~assay.scheduler._index.PoolState`): the room only reads them, sorted, and must be
    told (:meth:`refresh`) which agents' lists changed."""

    __slots__ = ("_entry", "_labels", "_top", "_views", "best", "cpu", "memory", "slots")

    def __init__(
        self,
        agents: Sequence[Agent],
        slots: Mapping[str, Sequence[str]],
        cpu: dict[str, float],
        memory: dict[str, float],
        fitting: Fitting,
    ) -> None:
        self.slots = slots
        self.cpu = cpu
        self.memory = memory
        self.best = fitting is Fitting.BEST
        self._labels: dict[str, frozenset[str]] = {}
        # Per enabled agent: its free slot count and key as indexed now.
        self._entry: dict[str, tuple[int, _Key]] = {}
        for agent in agents:
            if agent.enabled:
                self._labels[agent.id] = agent.labels
                self._entry[agent.id] = self._entry_of(
                    agent.id, len(slots.get(agent.id, ())), cpu[agent.id], memory[agent.id]
                )
        self._top = max((count for count, _ in self._entry.values()), default=0)
        self._views: dict[str | None, _View] = {}

    def _entry_of(self, agent_id: str, count: int, cpu: float, memory: float) -> tuple[int, _Key]:
        if self.best:
            return count, (cpu, memory, agent_id)
        return count, (-cpu, -memory, agent_id)

    def _view(self, label: str | None) -> _View:
        view = self._views.get(label)
        if view is None:
            view = self._views[label] = _View(label, self._top)
            for agent_id, (count, key) in self._entry.items():
                if label is None or label in self._labels[agent_id]:
                    view.buckets[count].append(key)
            for bucket in view.buckets:
                bucket.sort()
        return view

    def _move(self, agent_id: str, count: int, cpu: float, memory: float) -> None:
        """Index ``agent_id`` with these free slots, cores and memory."""
        old_count, old_key = self._entry[agent_id]
        new = self._entry_of(agent_id, count, cpu, memory)
        if new == (old_count, old_key):
            return
        self._entry[agent_id] = new
        if count > self._top:
            for view in self._views.values():
                view.buckets.extend([] for _ in range(count - self._top))
            self._top = count
        labels = self._labels[agent_id]
        for label, view in self._views.items():
            if label is not None and label not in labels:
                continue
            bucket = view.buckets[old_count]
            del bucket[bisect_left(bucket, old_key)]
            insort(view.buckets[count], new[1])

    def refresh(self, agent_ids: Iterable[str]) -> None:
        """Re-read the free slots, cores and memory of ``agent_ids`` (after they changed)."""
        for agent_id in agent_ids:
            if agent_id in self._entry:
                self._move(
                    agent_id,
                    len(self.slots.get(agent_id, ())),
                    self.cpu[agent_id],
                    self.memory[agent_id],
                )

    def _find(self, part: Part) -> str | None:
        """The agent the fitting prefers for ``part`` among those it fits on now."""
        buckets = self._view(part.label).buckets
        need_cpu = part.cpu
        need_memory = part.memory_mb
        if part.slots >= len(buckets):
            return None
        if self.best:
            for count in range(part.slots, len(buckets)):
                keys = buckets[count]
                # Sorted by cores: those with enough cores are a suffix.
                if not keys or keys[-1][0] + CPU_TOLERANCE < need_cpu:
                    continue
                i = bisect_left(keys, (need_cpu - CPU_TOLERANCE,))
                # The bisection used a rounded bound; settle on the exact test a scan makes.
                while i > 0 and keys[i - 1][0] + CPU_TOLERANCE >= need_cpu:
                    i -= 1
                while keys[i][0] + CPU_TOLERANCE < need_cpu:
                    i += 1
                for j in range(i, len(keys)):
                    key = keys[j]
                    if key[1] >= need_memory:
                        return key[2]
            return None
        for count in range(len(buckets) - 1, part.slots - 1, -1):
            # Sorted by cores, most first: those with enough cores are a prefix.
            for key in buckets[count]:
                if -key[0] + CPU_TOLERANCE < need_cpu:
                    break
                if -key[1] >= need_memory:
                    return key[2]
        return None

    def place(self, parts: Sequence[Part]) -> list[Spot] | None:
        """Where each of ``parts`` goes (in their order), or None when they do not all fit.

        Takes nothing (see :meth:`take`), but when the parts fit the index is left as if they
        were taken (most gangs placed are then taken): :meth:`refresh` their agents after
        taking them, or to place something else instead."""
        n = len(parts)
        order = sorted(
            range(n), key=lambda i: (-parts[i].slots, -parts[i].memory_mb, -parts[i].cpu, i)
        )
        # What earlier parts of this gang took, per agent: indexed while the gang is placed.
        used: dict[str, int] = {}
        used_cpu: dict[str, float] = {}
        used_memory: dict[str, float] = {}
        spots: list[Spot | None] = [None] * n
        for i in order:
            part = parts[i]
            chosen = self._find(part)
            if chosen is None:
                self.refresh(used)
                return None
            start = used.get(chosen, 0)
            slot_ids = self.slots[chosen]
            spots[i] = (chosen, tuple(slot_ids[start : start + part.slots]))
            used[chosen] = start + part.slots
            taken_cpu = used_cpu[chosen] = used_cpu.get(chosen, 0.0) + part.cpu
            taken_memory = used_memory[chosen] = used_memory.get(chosen, 0.0) + part.memory_mb
            self._move(
                chosen,
                len(slot_ids) - used[chosen],
                self.cpu[chosen] - taken_cpu,
                self.memory[chosen] - taken_memory,
            )
        return [spot for spot in spots if spot is not None]

    def take(self, parts: Sequence[Part], spots: Sequence[Spot]) -> None:
        """Remove the cores and memory of ``parts`` placed at ``spots``. The slots are taken
        from whoever owns the slot lists, who then calls :meth:`refresh` for these agents."""
        for part, (agent_id, _) in zip(parts, spots, strict=True):
            self.cpu[agent_id] -= part.cpu
            self.memory[agent_id] -= part.memory_mb
