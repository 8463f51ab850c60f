"""Checkpoint storage: one protocol, implemented for shared file systems, plain directories and
object stores (S3 and S3-compatible stores, Google Cloud Storage, Azure Blob Storage).

Use :func:`storage_from_config` with a ``checkpoint_storage`` section; every implementation
passes the conformance kit in :mod:`assay.storage.testing`. A storage that can also keep
TensorBoard's growing files implements :class:`FileStore` (keys beside the checkpoints). The
master gives every storage it builds an :class:`EndpointLimit`: the object-store servers it may
contact.
"""

from __future__ import annotations

from assay.storage._base import Progress, StorageManager, check_uuid, list_directory
from assay.storage._config import (
    AVAILABLE_STORAGE_TYPES,
    LOCAL_STORAGE_TYPES,
    shared_fs_path,
    storage_from_config,
)
from assay.storage._files import (
    TENSORBOARD_PREFIX,
    FileStore,
    check_key,
    tensorboard_key,
)
from assay.storage._local import DirectoryStorage, SharedFSStorage
from assay.storage._mirror import STORAGE_ENV as TENSORBOARD_STORAGE_ENV
from assay.storage._object import ObjectClient, ObjectStorage
from assay.storage._probe import PROBE_TIMEOUT, probe, probe_config_storage, storage_endpoint
from assay.storage._reach import (
    Endpoint,
    EndpointLimit,
    EndpointNotAllowed,
)

__all__ = [
    "AVAILABLE_STORAGE_TYPES",
    "LOCAL_STORAGE_TYPES",
    "PROBE_TIMEOUT",
    "TENSORBOARD_PREFIX",
    "TENSORBOARD_STORAGE_ENV",
    "DirectoryStorage",
    "Endpoint",
    "EndpointLimit",
    "EndpointNotAllowed",
    "FileStore",
    "ObjectClient",
    "ObjectStorage",
    "Progress",
    "SharedFSStorage",
    "StorageManager",
    "check_key",
    "check_uuid",
    "list_directory",
    "probe",
    "probe_config_storage",
    "shared_fs_path",
    "storage_endpoint",
    "storage_from_config",
    "tensorboard_key",
]
