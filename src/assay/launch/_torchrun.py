"""The ``torch.distributed.run`` command line of this node, with the allocation's rendezvous."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from assay.protocol import RankLayout


def torchrun_argv(
    layout: RankLayout, overrides: Sequence[str], command: Sequence[str]
) -> list[str]:
    """``torchrun`` for this node: ``nnodes``, ``node_rank`` and ``nproc_per_node`` (the slots
    here) from the layout, the chief's address and port as its static rendezvous, each worker
    under ``wrap_rank`` so its lines carry its rank; ``overrides`` (torchrun's own options) last,
    so they win."""
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        f"--nnodes={layout.num_nodes}",
        f"--node_rank={layout.node_rank}",
        f"--nproc_per_node={layout.local_world_size}",
        f"--master_addr={layout.master_addr}",
        f"--master_port={layout.master_port}",
        *overrides,
        "--no_python",
        sys.executable,
        "-m",
        "assay.launch.wrap_rank",
        "RANK",
        "--",
        *command,
    ]
