"""Where ``assay up`` keeps what it started: ``ASSAY_HOME``, and in it the record of the running
cluster (``run/cluster.json``). Apart from ``_common`` and ``_up_options``, which both read
them."""

from __future__ import annotations

import os
from pathlib import Path


def assay_home() -> Path:
    return Path(os.environ.get("ASSAY_HOME", "~/.assay")).expanduser().resolve()


def cluster_file() -> Path:
    return assay_home() / "run" / "cluster.json"


__all__ = ["assay_home", "cluster_file"]
