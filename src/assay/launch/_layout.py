"""This node's share of the allocation, as the agent describes it to the entrypoint."""

from __future__ import annotations

import json
import os

from assay.errors import AssayError
from assay.ports import free_ports
from assay.protocol import RankLayout, TrialEnv

LOOPBACK = "127.0.0.1"


class LaunchError(AssayError):
    """A launcher cannot start its command; the message is the one line the trial log gets."""

    type = "LaunchError"


def node_layout() -> RankLayout:
    """The layout the agent passed in ``ASSAY_RANK_LAYOUT``; a single process on loopback
    (free ports) when it passed none: a one-slot trial, or a run outside a cluster."""
    raw = os.environ.get(TrialEnv.RANK_LAYOUT)
    if raw:
        try:
            return RankLayout.from_dict(json.loads(raw))
        except (ValueError, AssayError) as exc:
            raise LaunchError(f"{TrialEnv.RANK_LAYOUT} is not a rank layout: {exc}") from exc
    port, rendezvous = free_ports(2, LOOPBACK)
    return RankLayout(
        world_size=1,
        node_rank=0,
        num_nodes=1,
        first_rank=0,
        local_world_size=1,
        master_addr=LOOPBACK,
        master_port=port,
        rendezvous_port=rendezvous,
    )


def rank_env(layout: RankLayout, local_rank: int) -> dict[str, str]:
    """The variables of the process for ``local_rank`` on this node (torchrun's names), plus
    the port the harness's collectives use."""
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
