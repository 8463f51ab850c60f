"""What both policies share within one pass: the pool's slots, the decision being built, and
the bookkeeping of slots each job holds."""

from __future__ import annotations

from dataclasses import dataclass, field

from assay.scheduler._index import PoolState
from assay.scheduler._model import (
    Decision,
    InconsistentSnapshot,
    Job,
    Part,
    PartPlacement,
    Placement,
    PoolSnapshot,
    Request,
    Running,
)
from assay.scheduler._parts import open_room
from assay.scheduler._room import Room

Shape = tuple[int, str | None, bool]
"""What decides whether a request can be placed: its slots, label and single-node flag."""

Kind = Shape | tuple[Part, ...]
"""What decides whether any request can be placed: its shape, or a gang's parts."""


def shape(req: Request) -> Shape:
    return (req.slots, req.label, req.is_single_node)


def job_of(pool: PoolSnapshot, job_id: str, what: str) -> Job:
    job = pool.jobs.get(job_id)
    if job is None:
        raise InconsistentSnapshot(
            f"{what} names job {job_id!r}, which is not in the snapshot of pool {pool.name!r}; "
            "every pending request and running allocation needs its job in PoolSnapshot.jobs"
        )
    return job


@dataclass
class Pass:
    """The decision under construction, and the pool state it is taken from."""

    pool: PoolSnapshot
    state: PoolState
    held: dict[str, int]
    """Slots per job: held by its allocations (also those giving them back), started or
    reserved in this pass. ``max_slots`` is checked against it."""
    assign: dict[str, Placement] = field(default_factory=dict)
    reserve: dict[str, Placement] = field(default_factory=dict)
    victims: dict[str, tuple[str, ...]] = field(default_factory=dict)
    preempt: list[str] = field(default_factory=list)
    parts: dict[str, PartPlacement] = field(default_factory=dict)
    gangs: int = 0
    """How many pending requests are gangs (counted by :meth:`start_zero_slot`)."""
    room: Room | None = None
    """Cores and memory free for gangs, opened on the first gang of the pass."""

    @classmethod
    def open(cls, pool: PoolSnapshot) -> Pass:
        state = PoolState(pool.agents, pool.fitting)
        held: dict[str, int] = {}
        jobs = pool.jobs
        for alloc in pool.running:
            if alloc.job_id not in jobs:
                job_of(pool, alloc.job_id, f"running allocation {alloc.id!r}")
            held[alloc.job_id] = held.get(alloc.job_id, 0) + alloc.slots
            if alloc.preempting:
                state.add_coming(alloc.assignment)
        return cls(pool=pool, state=state, held=held)

    def within_max_slots(self, job: Job, req: Request) -> bool:
        return job.max_slots is None or self.held.get(job.id, 0) + req.slots <= job.max_slots

    def _take(self, placement: Placement) -> None:
        self.state.take(placement)
        if self.room is not None:
            self.room.refresh(placement)

    def start(self, req: Request, placement: Placement) -> None:
        self._take(placement)
        self.assign[req.id] = placement
        self.held[req.job_id] = self.held.get(req.job_id, 0) + req.slots

    def wait(self, req: Request, placement: Placement, victims: list[Running]) -> None:
        """Hold ``placement`` for ``req`` until the allocations on it have exited."""
        for victim in victims:
            self.state.add_coming(victim.assignment)
            self.preempt.append(victim.id)
        self._take(placement)
        self.reserve[req.id] = placement
        if victims:
            self.victims[req.id] = tuple(v.id for v in victims)
        self.held[req.job_id] = self.held.get(req.job_id, 0) + req.slots

    def start_gang(self, req: Request) -> bool:
        """Start gang request ``req`` on the slots, cores and memory free now, if its parts
        all fit there."""
        room = self.room
        if room is None:
            # Every enabled agent, also those without slots (they take CPU-only parts).
            avail = self.state.avail
            slots = {a.id: avail.get(a.id, []) for a in self.pool.agents if a.enabled}
            room = self.room = open_room(
                self.pool.agents, slots, self.pool.running, self.pool.fitting
            )
        spots = room.place(req.parts)
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
        # Cores and memory changed wherever a part went, slots where one took any.
        room.refresh(placement)
        self.assign[req.id] = placement
        self.parts[req.id] = tuple(spots)
        self.held[req.job_id] = self.held.get(req.job_id, 0) + req.slots
        return True

    def start_zero_slot(self) -> list[Request]:
        """Start every zero-slot request (they need no slots, so nothing can hold them back)
        and return the others. Gangs are among the others, zero-slot or not: their parts
        still need cores and memory."""
        rest = []
        jobs = self.pool.jobs
        for req in self.pool.pending:
            if req.job_id not in jobs:
                job_of(self.pool, req.job_id, f"pending request {req.id!r}")
            if req.parts:
                if req.slots != sum(p.slots for p in req.parts):
                    raise InconsistentSnapshot(
                        f"gang request {req.id!r} asks for {req.slots} slots, but its parts "
                        f"for {sum(p.slots for p in req.parts)}; Request.slots must be their sum"
                    )
                self.gangs += 1
                rest.append(req)
            elif req.slots == 0:
                self.assign[req.id] = {}
            else:
                rest.append(req)
        return rest

    def decision(self) -> Decision:
        return Decision(
            assign=self.assign,
            preempt=tuple(self.preempt),
            reserve=self.reserve,
            victims=self.victims,
            parts=self.parts,
        )
