"""The resource-manager seam: what the master needs of whatever runs a pool's allocations.

Defined here, with the messages it speaks, so that the agent (beneath the resource managers)
and every manager implement the one definition."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

from assay.protocol._agent import AgentMessage, Hello, Start, Welcome

Report = Callable[[str, "AgentMessage | Hello"], Awaitable[None]]
"""How a manager tells the master what happened: ``report(node_id, message)``."""


@runtime_checkable
class ResourceManager(Protocol):
    """Runs one resource pool's allocations on an executor: assay's own agents, Slurm,
    Kubernetes.

    The master speaks to every implementation in the agent protocol's messages
    (:mod:`assay.protocol`), so its lifecycle, gang, rendezvous and recovery code is one path
    for all of them. A *node* is what the master's scheduler places work on: an agent, a Slurm
    node, a Kubernetes node group. Every method is called from the master's event loop and must
    not block it.

    The contract, which :mod:`assay.rm.testing` checks against every implementation:

    1. :meth:`open` starts the manager and answers one :class:`Hello` per node it offers: the
       node's id and pool, its slots (the capacity the scheduler fills), and the work it holds
       from before: ``running`` (allocation ids whose processes still run) and ``exited``
       (ends not yet acknowledged). A manager opened again, after a master restart, finds its
       earlier work there; nothing started is forgotten. From then on it reports through
       ``report``.
    2. :meth:`start` takes one allocation and returns without waiting for it. The manager then
       reports :class:`Started` once its process runs, :class:`Logs` with its output lines in
       order, and one :class:`Exited` with its exit code (``None`` where none could be known)
       and why. A start that cannot be carried out still ends in an ``Exited`` (code 1 and the
       reason). A second start of the same allocation is ignored.
    3. :meth:`kill` ends an allocation: its processes are sent SIGTERM (the harness
       checkpoints and exits) and SIGKILL after the grace period; with ``now`` (the master has
       given the allocation up, and a copy may run elsewhere) SIGKILL at once. Its ``Exited``
       follows. A kill that overtakes its start ends that allocation without running it. A
       kill of an unknown or ended allocation does nothing.
    4. :meth:`acknowledge` says the master recorded an allocation's exit: the manager forgets
       it (it is in no later hello) and removes its files.
    5. :meth:`welcome` says the master took a node whose hello it was given, and has
       reconciled what runs there: an agent at the other end of a socket is told; a manager
       whose nodes are its own has nothing to do.
    6. :meth:`close` stops reporting and releases the manager's own resources; running
       allocations keep running, to be found by the next :meth:`open`.
    """

    async def open(self, report: Report) -> list[Hello]: ...

    async def start(self, node: str, message: Start) -> None: ...

    async def kill(self, node: str, allocation_id: str, *, now: bool = False) -> None: ...

    async def acknowledge(self, node: str, allocation_id: str) -> None: ...

    async def welcome(self, node: str, message: Welcome) -> None: ...

    async def close(self) -> None: ...
