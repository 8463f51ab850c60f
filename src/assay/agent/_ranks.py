"""The rank layout of a distributed allocation, and the variables each of its processes gets.

The master sends an agent the layout of its share of the allocation (the ``distributed`` field
of a start message); the agent starts one process per slot, each with the variables
``torchrun`` sets (``torch.distributed``'s ``env://`` initialisation reads them) plus the port
the harness's own collectives use.
"""

from __future__ import annotations

from assay.protocol import RankLayout, TrialEnv


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
        TrialEnv.RENDEZVOUS_PORT: str(layout.rendezvous_port),
    }
