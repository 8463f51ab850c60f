"""Small builders shared by the scheduler tests (generated pools come from
``assay.scheduler.testing.snapshots``)."""

from __future__ import annotations

from assay.scheduler import Agent


def agents_of(*sizes: int, busy: dict[int, int] | None = None) -> tuple[Agent, ...]:
    """Agents a0, a1, ... of the given sizes; ``busy[i]`` slots of agent i are not free."""
    busy = busy or {}
    out = []
    for i, size in enumerate(sizes):
        slots = tuple(f"a{i}s{s}" for s in range(size))
        out.append(Agent(f"a{i}", slots, slots[busy.get(i, 0) :]))
    return tuple(out)


def used(agent: Agent, n: int, start: int = 0) -> tuple[str, ...]:
    """``n`` slot ids of ``agent`` from ``start`` (for building running allocations)."""
    return agent.slots[start : start + n]
