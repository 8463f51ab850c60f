"""``python3 -m assay.launch.per_slot CMD...``: one process per slot of this node.

Each process gets torchrun's variables for its rank (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``,
``MASTER_ADDR``, ...), so ``torch.distributed``'s ``env://`` initialisation and
``assay.core.init()`` find their place without torchrun. Output lines are tagged
``[rank=N]``; a failing process stops the others.
"""

from __future__ import annotations

import os

from assay.launch._cli import run_main, split_command
from assay.launch._layout import node_layout, rank_env
from assay.launch._procs import run_tagged

NAME = "assay.launch.per_slot"


def main(argv: list[str]) -> int:
    _, command = split_command(NAME, argv)
    layout = node_layout()
    commands = [
        (layout.rank(local), command, {**os.environ, **rank_env(layout, local)})
        for local in range(layout.local_world_size)
    ]
    return run_tagged(NAME, commands, tag=layout.world_size > 1)


if __name__ == "__main__":
    run_main(main)
