"""What a trial process knows about itself: ``assay.get_cluster_info()``."""

from __future__ import annotations

import functools
import json
import os

from assay.protocol import ClusterInfo


@functools.cache
def get_cluster_info() -> ClusterInfo | None:
    """This process's cluster info, or None when it runs outside a cluster."""
    path = os.environ.get("ASSAY_CLUSTER_INFO")
    if not path:
        return None
    with open(path) as f:
        raw = json.load(f)
    return ClusterInfo.from_dict(
        raw,
        token=os.environ.get("ASSAY_TOKEN", ""),
        master_url=os.environ.get("ASSAY_MASTER", ""),
        where=f"cluster info ({path})",
    )
