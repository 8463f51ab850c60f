"""Checkpoint storage: one protocol, implemented for shared file systems and plain directories.

Use :func:`storage_from_config` with a ``checkpoint_storage`` section; every implementation
passes the conformance kit in :mod:`assay.storage.testing`.
"""

from __future__ import annotations

from assay.storage._base import StorageManager, check_uuid, list_directory
from assay.storage._config import AVAILABLE_STORAGE_TYPES, shared_fs_path, storage_from_config
from assay.storage._local import DirectoryStorage, SharedFSStorage

__all__ = [
    "AVAILABLE_STORAGE_TYPES",
    "DirectoryStorage",
    "SharedFSStorage",
    "StorageManager",
    "check_uuid",
    "list_directory",
    "shared_fs_path",
    "storage_from_config",
]
