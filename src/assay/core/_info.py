"""What a trial process knows about itself: ``assay.get_cluster_info()``."""

from __future__ import annotations

import functools
import json
import os

from assay.protocol import ClusterInfo, TrialEnv


@functools.cache
def get_cluster_info() -> ClusterInfo | None:
    """This process's cluster info, or None when it runs outside a cluster."""
    path = os.environ.get(TrialEnv.CLUSTER_INFO)
    if not path:
        return None
    with open(path) as f:
        raw = json.load(f)
    return ClusterInfo.from_dict(
        raw,
        token=os.environ.get(TrialEnv.TOKEN, ""),
        master_url=os.environ.get(TrialEnv.MASTER, ""),
        where=f"cluster info ({path})",
    )
