"""Allocations of several slots: their rank layout, their rendezvous port, their shared exit.

A trial with ``slots_per_trial > 1`` runs one process per slot, on one agent or on a gang of
whole agents. Each agent's start message carries its part of the rank layout (torchrun's
conventions: agents in sorted order, ranks numbered agent after agent). The ranks meet at the
rank-0 agent on two ports: ``MASTER_PORT`` for ``torch.distributed`` and the next one for the
harness's own collectives.

The allocation lives and dies as one: when one agent reports a failure the others are told to
kill their processes, and the allocation ends, with the first failing exit code, once every
agent has reported.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Protocol

from assay.db import Allocation, Session, allocations
from assay.master.experiments._lifecycle import allocation_exited
from assay.master.kernel import KillAllocation, Tx
from assay.protocol import AllocationState, RankLayout

log = logging.getLogger(__name__)

RENDEZVOUS_BASE = 29500
"""The lowest rendezvous port, torch.distributed's default ``MASTER_PORT``."""
LOOPBACK = "127.0.0.1"
RUN_SHIFTS = 32
"""How many runs' bases :func:`run_base` cycles through before it comes back to the first."""


class Addressed(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def address(self) -> str: ...


# -- pure -------------------------------------------------------------------------------------


def world_size(placement: Mapping[str, Sequence[str]]) -> int:
    return sum(len(slots) for slots in placement.values())


def rank_layouts(
    placement: Mapping[str, Sequence[str]], master_addr: str, port: int
) -> dict[str, RankLayout]:
    """Each agent's part of the rank layout (the ``distributed`` field of its start message)."""
    world = world_size(placement)
    layouts: dict[str, RankLayout] = {}
    first = 0
    for node, agent_id in enumerate(sorted(placement)):
        local = len(placement[agent_id])
        layouts[agent_id] = RankLayout(
            world_size=world,
            node_rank=node,
            num_nodes=len(placement),
            first_rank=first,
            local_world_size=local,
            master_addr=master_addr,
            master_port=port,
            rendezvous_port=port + 1,
        )
        first += local
    return layouts


def pick_port(taken: Collection[int], base: int = RENDEZVOUS_BASE) -> int:
    """The lowest port >= ``base`` that is free together with the one after it."""
    port = base
    while port in taken or port + 1 in taken:
        port += 1
    return port


def run_base(run: int, base: int = RENDEZVOUS_BASE) -> int:
    """Where the search for a run's port pair starts: each run of a trial a pair further on from
    ``base``, so a run that failed on a port some other program holds is not run again on the
    same one."""
    return base + 2 * ((max(run, 1) - 1) % RUN_SHIFTS)


def first_failure(exits: Mapping[str, int | None]) -> tuple[str, int | None] | None:
    """The first agent (in report order) whose processes failed or were lost, and its code."""
    for agent_id, code in exits.items():
        if code is None or code != 0:
            return agent_id, code
    return None


# -- starting -----------------------------------------------------------------------------------


def plan(
    tx: Tx,
    alloc: Allocation,
    placement: Mapping[str, Sequence[str]],
    agents: Mapping[str, Addressed],
    base: int = RENDEZVOUS_BASE,
) -> dict[str, RankLayout]:
    """The rank layout of each agent of a new allocation; empty when it has a single slot.

    Reserves the rendezvous port on the rank-0 agent (``alloc.rendezvous_port``), avoiding the
    ports of live allocations whose rank 0 is on the same agent or on another agent at the
    same address (several agents may share a machine). The search starts at ``base`` (the
    master's ``rendezvous_port_base``), each run of the trial further on (:func:`run_base`).
    """
    if world_size(placement) <= 1:
        return {}
    host = sorted(placement)[0]
    address = agents[host].address if host in agents else ""
    # All ranks on one agent meet over loopback: nothing outside the machine needs to reach
    # them, whatever the agent's address.
    master_addr = LOOPBACK if len(placement) == 1 else (address or host)
    neighbours = {host} | {a.id for a in agents.values() if address and a.address == address}
    start = run_base(alloc.run, base)
    port = pick_port(_ports_taken(tx, neighbours, alloc.id), start)
    allocations.set_rendezvous_port(tx.session, alloc, port=port)
    return rank_layouts(placement, master_addr, port)


def _ports_taken(tx: Tx, hosts: Collection[str], own_id: str) -> set[int]:
    taken: set[int] = set()
    for other in allocations.live(tx.session):
        if other.id == own_id or other.rendezvous_port is None or not other.slots:
            continue
        if sorted(other.slots)[0] in hosts:
            taken.update((other.rendezvous_port, other.rendezvous_port + 1))
    return taken


def container_addrs(
    placement: Mapping[str, Sequence[str]], agents: Mapping[str, Addressed]
) -> list[str]:
    """The agents' addresses in rank order (Determined's ``container_addrs``)."""
    return [
        agents[a].address if a in agents and agents[a].address else a for a in sorted(placement)
    ]


# -- exits --------------------------------------------------------------------------------------


def exit_is_new(session: Session, agent_id: str, allocation_id: str) -> bool:
    """Whether :func:`agent_exited` would record this agent's report: the allocation is live,
    runs on the agent, and has no exit of it yet (a repeat after a reconnect has)."""
    alloc = allocations.get(session, allocation_id)
    return (
        alloc is not None
        and alloc.state != AllocationState.TERMINATED
        and agent_id in (alloc.slots or {})
        and agent_id not in (alloc.exits or {})
    )


def agent_exited(
    tx: Tx,
    agent_id: str,
    allocation_id: str,
    exit_code: int | None,
    reason: str,
    *,
    lost: bool = False,
) -> None:
    """One agent's processes of an allocation ended (``exit_code`` None: they were lost).
    ``lost``: they ended with their agent (lost, stopped, or back without them), not on their
    own; recorded on the allocation (``Allocation.lost``) unless one of its processes had
    failed already, so its trial's restart is the cluster's, not its own.

    A single-agent allocation ends at once. A multi-agent one records the code in
    ``Allocation.exits``; on a failure the other agents are told to kill their processes; it
    ends once every agent has reported, with the first failing code (0 if none failed).
    """
    alloc = allocations.get(tx.session, allocation_id)
    if alloc is None or alloc.state == AllocationState.TERMINATED:
        return
    agents = sorted(alloc.slots or {})
    if agent_id not in agents:
        log.warning(
            "agent %s reported an exit of allocation %s, which runs on %s only; ignored",
            agent_id,
            allocation_id,
            ", ".join(agents),
        )
        return
    if len(agents) == 1:
        if lost:
            allocations.mark_lost(tx.session, alloc)
        allocation_exited(tx, allocation_id, exit_code, reason)
        return
    exits: dict[str, int | None] = dict(alloc.exits or {})
    if agent_id in exits:
        return  # a report repeated after a reconnect
    already_failed = first_failure(exits) is not None
    if lost and not already_failed:
        allocations.mark_lost(tx.session, alloc)
    allocations.record_agent_exit(tx.session, alloc, agent_id=agent_id, exit_code=exit_code)
    exits[agent_id] = exit_code
    failed = exit_code is None or exit_code != 0
    waiting = [a for a in agents if a not in exits]
    if failed and not already_failed:
        for other in waiting:
            tx.act(KillAllocation(other, alloc.id))
    if waiting:
        return
    first = first_failure(exits)
    if first is None:
        allocation_exited(tx, allocation_id, 0, reason)
        return
    culprit, code = first
    if alloc.kill_requested:
        allocation_exited(tx, allocation_id, code, reason or "killed")
        return
    detail = reason if culprit == agent_id else ""
    allocation_exited(tx, allocation_id, code, _gang_reason(culprit, code, detail, agents))


def _gang_reason(culprit: str, code: int | None, detail: str, agents: Iterable[str]) -> str:
    others = ", ".join(a for a in agents if a != culprit)
    what = "was lost" if code is None else "failed"
    detail = f" ({detail})" if detail else ""
    return f"agent {culprit} {what} first{detail}; the processes on {others} were stopped"
