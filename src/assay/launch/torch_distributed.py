"""``python3 -m assay.launch.torch_distributed [TORCHRUN_OPTIONS... --] CMD...``: the ranks
of this node started by ``torch.distributed.run`` (torchrun), meeting at the allocation's
rendezvous: ``nnodes`` and ``node_rank`` from the allocation, ``nproc_per_node`` = this node's
slots, the chief's address and port. Output lines are tagged ``[rank=N]``."""

from __future__ import annotations

import os
import sys

from assay.launch._cli import require, run_main, split_command
from assay.launch._layout import node_layout
from assay.launch._torchrun import torchrun_argv
from assay.protocol import TrialEnv

NAME = "torch_distributed"


def main(argv: list[str]) -> int:
    overrides, command = split_command(NAME, argv)
    require(NAME, "torch", "torch")
    layout = node_layout()
    # The harness's collectives (ctx.distributed) meet at the allocation's second port.
    os.environ[TrialEnv.RENDEZVOUS_PORT] = str(layout.rendezvous_port)
    args = torchrun_argv(layout, overrides, command)
    sys.stdout.flush()
    os.execv(args[0], args)
    return 0  # not reached


if __name__ == "__main__":
    run_main(main)
