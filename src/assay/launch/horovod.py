"""``python3 -m assay.launch.horovod [HOROVODRUN_OPTIONS... --] CMD...``: a Horovod script's
ranks, started by ``horovodrun`` on this node's slots. Horovod reaches other nodes over ssh,
which assay does not set up between agents: a trial on several agents is refused with a
message (torch_distributed needs no ssh)."""

from __future__ import annotations

import os
import shutil
import sys

from assay.launch._cli import require, run_main, split_command
from assay.launch._layout import LaunchError, node_layout

NAME = "horovod"


def main(argv: list[str]) -> int:
    overrides, command = split_command(NAME, argv)
    require(NAME, "horovod", "horovod")
    layout = node_layout()
    if layout.num_nodes > 1:
        raise LaunchError(
            f"{NAME}: this trial spans {layout.num_nodes} agents, and horovodrun reaches other "
            "machines over ssh, which assay does not set up; fit the trial on one agent "
            "(resources.slots_per_trial) or use torch_distributed"
        )
    runner = shutil.which("horovodrun")
    if runner is None:
        raise LaunchError(f"{NAME}: horovod is installed but its horovodrun command is not on PATH")
    n = layout.local_world_size
    args = [runner, "-np", str(n), "-H", f"localhost:{n}", *overrides, *command]
    sys.stdout.flush()
    os.execv(args[0], args)
    return 0  # not reached


if __name__ == "__main__":
    run_main(main)
