"""``python3 -m assay.launch.tensorflow [--] CMD...``: CMD once on this node with ``TF_CONFIG``
describing the allocation's nodes as the workers of a ``MultiWorkerMirroredStrategy`` (this
node's index among them, the node ranked 0 the chief)."""

from __future__ import annotations

import json
import os
import sys

from assay.launch._cli import require, run_main, split_command
from assay.launch._layout import LOOPBACK, LaunchError, node_layout
from assay.protocol import RankLayout, TrialEnv

NAME = "tensorflow"


def tf_config(layout: RankLayout, addrs: list[str]) -> dict[str, object]:
    """The ``TF_CONFIG`` of this node: every node's address at the allocation's port."""
    if layout.num_nodes == 1:
        addrs = [LOOPBACK]
    elif len(addrs) != layout.num_nodes:
        raise LaunchError(
            f"{NAME}: the cluster info names {len(addrs)} node addresses for "
            f"{layout.num_nodes} nodes"
        )
    workers = [f"{addr}:{layout.master_port}" for addr in addrs]
    return {"cluster": {"worker": workers}, "task": {"type": "worker", "index": layout.node_rank}}


def _container_addrs() -> list[str]:
    path = os.environ.get(TrialEnv.CLUSTER_INFO)
    if not path:
        return []
    with open(path) as f:
        raw = json.load(f)
    addrs = raw.get("container_addrs") or []
    return [str(a) for a in addrs]


def main(argv: list[str]) -> int:
    _, command = split_command(NAME, argv)
    require(NAME, "tensorflow", "tensorflow")
    layout = node_layout()
    os.environ["TF_CONFIG"] = json.dumps(tf_config(layout, _container_addrs()))
    sys.stdout.flush()
    os.execvp(command[0], command)
    return 0  # not reached


if __name__ == "__main__":
    run_main(main)
