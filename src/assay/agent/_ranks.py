"""The rank layout of a distributed allocation, and the variables each of its processes gets.

The master sends an agent the layout of its share of the allocation (the ``distributed`` field
of a start message); the agent starts one process per slot, each with the variables
``torchrun`` sets (``torch.distributed``'s ``env://`` initialisation reads them) plus the port
the harness's own collectives use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from assay.errors import InvalidRequest


@dataclass(frozen=True)
class RankLayout:
    world_size: int
    """Processes in the whole allocation: its slot count."""
    node_rank: int
    """This agent's place among the allocation's agents (0 holds rank 0)."""
    num_nodes: int
    first_rank: int
    """The global rank of this agent's local rank 0."""
    local_world_size: int
    """Processes on this agent: its slot count in the allocation."""
    master_addr: str
    master_port: int
    """Where rank 0 serves ``torch.distributed``'s rendezvous."""
    rendezvous_port: int
    """Where rank 0 serves the harness's collectives (``ctx.distributed``)."""

    @classmethod
    def from_message(cls, raw: Any) -> RankLayout | None:
        """The layout in a start message's ``distributed`` field; None for a single process."""
        if raw is None:
            return None
        if not isinstance(raw, dict):
            raise InvalidRequest(
                f"start message: distributed must be an object, got {type(raw).__name__}"
            )
        try:
            layout = cls(
                world_size=int(raw["world_size"]),
                node_rank=int(raw["node_rank"]),
                num_nodes=int(raw["num_nodes"]),
                first_rank=int(raw["first_rank"]),
                local_world_size=int(raw["local_world_size"]),
                master_addr=str(raw["master_addr"]),
                master_port=int(raw["master_port"]),
                rendezvous_port=int(raw["rendezvous_port"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidRequest(
                f"start message: distributed lacks or garbles {exc}; it needs world_size, "
                "node_rank, num_nodes, first_rank, local_world_size, master_addr, master_port "
                "and rendezvous_port"
            ) from exc
        problem = layout.problem()
        if problem:
            raise InvalidRequest(f"start message: distributed {problem}")
        return layout

    def problem(self) -> str:
        if self.local_world_size < 1:
            return f"local_world_size is {self.local_world_size}; it must be at least 1"
        if not 0 <= self.node_rank < self.num_nodes:
            return f"node_rank {self.node_rank} is outside 0..{self.num_nodes - 1}"
        if not 0 <= self.first_rank <= self.world_size - self.local_world_size:
            return (
                f"first_rank {self.first_rank} with {self.local_world_size} local processes "
                f"does not fit a world of {self.world_size}"
            )
        if not self.master_addr:
            return "master_addr is empty"
        return ""

    def rank(self, local_rank: int) -> int:
        return self.first_rank + local_rank


def process_env(layout: RankLayout, local_rank: int) -> dict[str, str]:
    """The variables of the process for ``local_rank`` on this agent (torchrun's names)."""
    if not 0 <= local_rank < layout.local_world_size:
        raise ValueError(f"local_rank must be in [0, {layout.local_world_size}), got {local_rank}")
    rank = str(layout.rank(local_rank))
    return {
        "RANK": rank,
        "WORLD_SIZE": str(layout.world_size),
        "LOCAL_RANK": str(local_rank),
        "LOCAL_WORLD_SIZE": str(layout.local_world_size),
        "GROUP_RANK": str(layout.node_rank),
        "NODE_RANK": str(layout.node_rank),
        "CROSS_RANK": str(layout.node_rank),
        "GROUP_WORLD_SIZE": str(layout.num_nodes),
        "ROLE_RANK": rank,
        "ROLE_WORLD_SIZE": str(layout.world_size),
        "MASTER_ADDR": layout.master_addr,
        "MASTER_PORT": str(layout.master_port),
        "ASSAY_RENDEZVOUS_PORT": str(layout.rendezvous_port),
    }
