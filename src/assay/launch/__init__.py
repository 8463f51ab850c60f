"""Launchers: what an entrypoint wraps its command in to start the processes of a node.

assay starts a trial's entrypoint once per node of its allocation (once per agent), as
Determined does, with the node's slots in ``CUDA_VISIBLE_DEVICES``. A distributed trial then
starts its ranks through a launcher, run as ``python3 -m assay.launch.NAME CMD...`` (or, for
Determined's code, ``python3 -m determined.launch.NAME CMD...``):

- ``per_slot``: one process per slot of this node, each with torchrun's variables (``RANK``,
  ``LOCAL_RANK``, ``WORLD_SIZE``, ...);
- ``torch_distributed``: ``torch.distributed.run`` with the allocation's rendezvous;
- ``deepspeed``, ``horovod``, ``tensorflow``: the same for those libraries, where installed;
- ``wrap_rank``: runs one command, each line of its output prefixed with its rank.

The modules import only :mod:`assay.protocol` and the standard library.
"""

from __future__ import annotations

from assay.launch._cli import run_main
from assay.launch._layout import LaunchError, node_layout, rank_env

__all__ = ["LaunchError", "node_layout", "rank_env", "run_main"]
