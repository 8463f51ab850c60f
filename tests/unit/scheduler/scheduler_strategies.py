"""Hypothesis strategies for pool snapshots and small builders, shared by the scheduler tests."""

from __future__ import annotations

from hypothesis import strategies as st

from assay.scheduler import (
    Agent,
    Fitting,
    Job,
    PolicyKind,
    PoolSnapshot,
    Request,
    Running,
)

LABELS = ("gpu", "big")


@st.composite
def snapshots(
    draw: st.DrawFn,
    policy: PolicyKind | None = None,
    preemption: bool | None = None,
    max_agents: int = 6,
    max_pending: int = 10,
    busy: bool = False,
) -> PoolSnapshot:
    """A pool of up to ``max_agents`` agents with running and pending work; ``busy`` pools have
    few free slots, so requests have to wait or preempt."""
    n_agents = draw(st.integers(1, max_agents))
    n_jobs = draw(st.integers(2, 5))
    jobs = {
        f"j{i}": Job(
            id=f"j{i}",
            priority=draw(st.sampled_from([1, 20, 42, 42, 99])),
            weight=draw(st.sampled_from([0.5, 1.0, 1.0, 2.0, 3.0])),
            queue_position=float(draw(st.integers(0, 3))),
            submitted=float(draw(st.integers(0, 5))),
            max_slots=draw(st.one_of(st.none(), st.none(), st.integers(1, 12))),
            preemptible=draw(st.sampled_from([True, True, True, False])),
        )
        for i in range(n_jobs)
    }
    job_ids = sorted(jobs)
    agents: list[Agent] = []
    running: list[Running] = []
    counter = 0
    whole: list[tuple[str, tuple[str, ...]]] = []
    for a in range(n_agents):
        agent_id = f"a{a}"
        size = draw(st.sampled_from([1, 2, 4, 4, 4, 8, 8]))
        slots = tuple(f"{agent_id}s{s}" for s in range(size))
        free: list[str] = []
        owners = [0, 1, 1, 2, 2, 3] if busy else [0, 0, 1, 1, 2, 3]
        owner = draw(st.lists(st.sampled_from(owners), min_size=size, max_size=size))
        # owner 0: free; otherwise consecutive slots with the same owner form one allocation.
        groups: dict[int, list[str]] = {}
        for slot, o in zip(slots, owner, strict=True):
            if o == 0:
                free.append(slot)
            else:
                groups.setdefault(o, []).append(slot)
        if len(groups) == 1 and not free and draw(st.booleans()):
            whole.append((agent_id, slots))
        else:
            for group in groups.values():
                running.append(_alloc(draw, counter, job_ids, {agent_id: tuple(group)}))
                counter += 1
        labels = frozenset(draw(st.lists(st.sampled_from(LABELS), max_size=2)))
        enabled = draw(st.sampled_from([True, True, True, False]))
        agents.append(Agent(agent_id, slots, tuple(free), labels, enabled))
    # Fully used agents become gang allocations, two at a time when their sizes match.
    while whole:
        agent_id, slots = whole.pop()
        assignment = {agent_id: slots}
        partner = next((w for w in whole if len(w[1]) == len(slots)), None)
        if partner is not None and draw(st.booleans()):
            whole.remove(partner)
            assignment[partner[0]] = partner[1]
        running.append(_alloc(draw, counter, job_ids, assignment))
        counter += 1
    n_pending = draw(st.integers(0, max_pending))
    pending = tuple(
        Request(
            id=f"r{i}",
            job_id=draw(st.sampled_from(job_ids)),
            slots=draw(st.sampled_from([0, 1, 1, 2, 2, 3, 4, 4, 8, 8, 16])),
            submitted=float(draw(st.integers(0, 5))),
            label=draw(st.sampled_from([None, None, None, "gpu"])),
            is_single_node=draw(st.booleans()),
        )
        for i in range(n_pending)
    )
    return PoolSnapshot(
        name="default",
        agents=tuple(agents),
        jobs=jobs,
        pending=pending,
        running=tuple(running),
        policy=policy if policy is not None else draw(st.sampled_from(list(PolicyKind))),
        preemption=preemption if preemption is not None else draw(st.booleans()),
        fitting=draw(st.sampled_from(list(Fitting))),
    )


def _alloc(
    draw: st.DrawFn, n: int, job_ids: list[str], assignment: dict[str, tuple[str, ...]]
) -> Running:
    return Running(
        id=f"x{n}",
        job_id=draw(st.sampled_from(job_ids)),
        assignment=assignment,
        started=float(draw(st.integers(0, 9))),
        preempting=draw(st.sampled_from([False, False, False, True])),
    )


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
