"""One allocation path for every kind of work.

Experiments' trials, tasks (OpenPAI jobs, commands, generic tasks, TensorBoards) and whatever
runs next are each an :class:`AllocationKind`: the scheduling pass, the agents' gateway and the
master's loops speak only to this protocol, so a new kind is one implementation in its own room,
with nothing in the scheduler, the gateway or the loops to edit. Which kind an allocation is of
is read from ``allocation_owners``, written when it started, never from its id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from assay.db import Session, owners
from assay.master.kernel._agents import AgentView
from assay.master.kernel._tx import Tx
from assay.protocol import Exited, LogEntry
from assay.scheduler import Job as JobView
from assay.scheduler import Request, Running

Placement = Mapping[str, Sequence[str]]
"""Slot ids by agent id: where the scheduler put a request (one entry per node)."""


class AgentStarted(NamedTuple):
    """An agent's word that an allocation's process runs."""

    allocation_id: str
    agent_id: str
    address: str = ""
    """Where it runs when that is not the agent's own address (a Kubernetes pod's)."""


@dataclass(frozen=True)
class Held:
    """An allocation an agent should be running, as its kind sees it."""

    allocation_id: str
    started: bool
    """The master has recorded it running (else its Started may have been lost)."""
    kill_due: bool
    """A kill was asked for and not yet obeyed: it is repeated until it is."""
    agents: tuple[str, ...]
    """The agents whose part of it has not ended."""
    preempt: bool = False
    """It is asked to stop: told again to an agent that reconnects (:class:`Preempt`)."""


@dataclass
class PoolWork:
    """One kind's part of a pool's snapshot for the scheduling pass."""

    pending: list[Request] = field(default_factory=list)
    running: list[Running] = field(default_factory=list)
    jobs: dict[str, JobView] = field(default_factory=dict)


class KindPass(Protocol):
    """One kind's share of one scheduling pass, over the rows it read once at its start."""

    @property
    def waiting(self) -> Sequence[object]:
        """What of it waits for slots (read as the pass begins; empty: nothing)."""
        ...

    def used(self) -> dict[str, set[str]]:
        """The slots its live allocations hold, by agent."""
        ...

    def pool(self, name: str) -> PoolWork:
        """What of it waits in, and runs in, pool ``name``."""
        ...

    def start(
        self,
        request_id: str,
        assigned: Placement,
        parts: Sequence[tuple[str, Sequence[str]]],
        pool_agents: Sequence[AgentView],
        used: dict[str, set[str]],
    ) -> list[str]:
        """Start what the scheduler placed for ``request_id`` (``assigned``: slots by agent;
        ``parts``: one (agent, slots) per part of a request made of parts): write its rows,
        record the Start messages, add the slots taken to ``used``; the allocations started."""
        ...

    def reservation(self, request_id: str) -> str | None:
        """The job of a request the scheduler reserved slots for (it starts when they free)."""
        ...

    def preempt(self, allocation_id: str) -> bool:
        """Ask one of its running allocations to make room; whether it was one of them."""
        ...


class AllocationKind(Protocol):
    """What one kind of work answers for its allocations."""

    name: str

    def waiting(self, session: Session) -> bool:
        """Whether anything of it waits for slots (else a pass has nothing of it to place)."""
        ...

    def begin_pass(self, tx: Tx, cluster_id: str, agents: Sequence[AgentView]) -> KindPass:
        """Its share of a scheduling pass (what waits read at once, what runs when needed)."""
        ...

    def held_by(self, session: Session, agent_id: str) -> list[Held]:
        """Its live allocations with a part on ``agent_id`` that has not ended."""
        ...

    def live(self, session: Session) -> list[Held]:
        """Its live allocations."""
        ...

    def started(self, tx: Tx, starts: Sequence[AgentStarted]) -> None:
        """The agents say these allocations' processes run, in the order they said it: every
        start of this kind heard while the master's lock was held comes in one call (a pass
        starts hundreds at once)."""
        ...

    def exit_is_new(self, session: Session, agent_id: str, allocation_id: str) -> bool:
        """Whether :meth:`exited` would record this agent's report (a repeat is not)."""
        ...

    def exited(
        self,
        tx: Tx,
        agent_id: str,
        allocation_id: str,
        exit_code: int | None,
        reason: str,
        *,
        lost: bool,
    ) -> None:
        """The allocation's part on ``agent_id`` ended (``exit_code`` None and ``lost``: it
        was lost with its agent)."""
        ...

    def masked(self, session: Session, allocation_id: str, lines: list[LogEntry]) -> list[LogEntry]:
        """``lines`` of the allocation with its job's secrets masked."""
        ...

    def store_lines(
        self,
        session: Session,
        lines: Mapping[str, list[LogEntry]],
        *,
        unless_stored: bool,
    ) -> list[tuple[Any, ...]]:
        """Store the (masked) lines of each allocation (``{allocation_id: lines}``, all of
        this kind); the long-poll keys their followers wait on, one per allocation whose lines
        were stored (``unless_stored``: an exit's lines, skipped when they are already its last
        stored ones). One call takes an agent's whole batch: a large cluster's agents send
        thousands of lines a second."""
        ...


def kind_of(
    kinds: Sequence[AllocationKind], session: Session, allocation_id: str
) -> AllocationKind | None:
    """The kind that owns ``allocation_id`` (``allocation_owners``, written when it started);
    None for an allocation of none."""
    name = owners.kind_of(session, allocation_id)
    return next((k for k in kinds if k.name == name), None) if name is not None else None


def kinds_of(
    kinds: Sequence[AllocationKind], session: Session, allocation_ids: Sequence[str]
) -> dict[str, AllocationKind]:
    """The kind that owns each of ``allocation_ids`` that one owns, read at once."""
    by_name = {k.name: k for k in kinds}
    named = owners.kinds_of(session, allocation_ids)
    return {a: by_name[name] for a, name in named.items() if name in by_name}


def exit_reason(kinds: Sequence[AllocationKind], session: Session, msg: Exited) -> str:
    """The exit's reason with its job's secrets masked: a process may have given it (the
    harness's failure line), and it becomes what users read."""
    kind = kind_of(kinds, session, msg.allocation_id) if msg.reason else None
    if kind is None:
        return msg.reason
    said = LogEntry(allocation_id=msg.allocation_id, trial_id=0, line=msg.reason)
    return kind.masked(session, msg.allocation_id, [said])[0].line


def aux_placement(
    agents: Sequence[AgentView], used: Mapping[str, set[str]]
) -> dict[str, tuple[str, ...]] | None:
    """Zero-slot work still runs somewhere: the enabled agent with the most free slots."""
    candidates = [a for a in agents if a.enabled]
    if not candidates:
        return None
    best = max(candidates, key=lambda a: (len(a.slots) - len(used.get(a.id, set())), a.id))
    return {best.id: ()}
