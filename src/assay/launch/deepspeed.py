"""``python3 -m assay.launch.deepspeed [TORCHRUN_OPTIONS... --] CMD...``: a DeepSpeed
script's ranks on this node. DeepSpeed's own launcher reaches other nodes over ssh; here each
node starts its ranks with torchrun at the allocation's rendezvous, which
``deepspeed.init_distributed()`` reads (torchrun's variables), so no ssh is needed."""

from __future__ import annotations

import os
import sys

from assay.launch._cli import require, run_main, split_command
from assay.launch._layout import node_layout
from assay.launch._torchrun import torchrun_argv
from assay.protocol import TrialEnv

NAME = "deepspeed"


def main(argv: list[str]) -> int:
    overrides, command = split_command(NAME, argv)
    require(NAME, "deepspeed", "deepspeed")
    require(NAME, "torch", "torch")
    layout = node_layout()
    os.environ[TrialEnv.RENDEZVOUS_PORT] = str(layout.rendezvous_port)
    args = torchrun_argv(layout, overrides, command)
    sys.stdout.flush()
    os.execv(args[0], args)
    return 0  # not reached


if __name__ == "__main__":
    run_main(main)
