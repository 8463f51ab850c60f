"""What trials leave behind: checkpoints (their files, deletion on demand, garbage
collection by policy) and the model registry.
"""

from __future__ import annotations

from assay.master.artifacts import _gc as gc
from assay.master.artifacts import _gc_demand as gc_demand
from assay.master.artifacts._checkpoints import CheckpointFiles, CheckpointService
from assay.master.artifacts._gc import Removal, mark_for_collection, remove_files, settle_removal
from assay.master.artifacts._registry import ModelRegistry, refuse_registered
from assay.master.artifacts._trained import CheckpointContext, TrainedCheckpoint

__all__ = [
    "CheckpointContext",
    "CheckpointFiles",
    "CheckpointService",
    "ModelRegistry",
    "Removal",
    "TrainedCheckpoint",
    "gc",
    "gc_demand",
    "mark_for_collection",
    "refuse_registered",
    "remove_files",
    "settle_removal",
]
