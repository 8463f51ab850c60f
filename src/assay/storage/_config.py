"""Building a storage manager from the ``checkpoint_storage`` section of a config."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from assay.errors import ErrorDetail, InvalidConfig
from assay.storage._base import StorageManager
from assay.storage._local import DirectoryStorage, SharedFSStorage

AVAILABLE_STORAGE_TYPES = ("shared_fs", "directory")
"""Checkpoint storage types this build can use."""

_UNAVAILABLE_TYPES = ("s3", "gcs", "azure")


def storage_from_config(
    cfg: Mapping[str, Any] | Any, *, where: str = "checkpoint_storage"
) -> StorageManager:
    """The storage manager a ``checkpoint_storage`` section describes.

    ``cfg`` is the JSON form (``{"type": "shared_fs", "host_path": ..., "storage_path": ...}``
    or ``{"type": "directory", "container_path": ...}``) or any object with those attributes,
    such as a config model. Keys that do not choose the location (``save_trial_best``,
    ``propagation``...) are ignored here. ``where`` is the dotted path reported in errors.

    Raises :class:`~assay.errors.InvalidConfig` listing every problem, each with its path.
    """
    kind = _field(cfg, "type")
    kind = getattr(kind, "value", kind)  # an enum member from a config model
    if kind == "shared_fs":
        return SharedFSStorage(
            shared_fs_path(_field(cfg, "host_path"), _field(cfg, "storage_path"), where=where)
        )
    if kind == "directory":
        return DirectoryStorage(_directory_path(_field(cfg, "container_path"), where=where))
    available = ", ".join(AVAILABLE_STORAGE_TYPES)
    if kind in _UNAVAILABLE_TYPES:
        problem = f"storage type {kind!r} is not available in this build; use one of {available}"
    elif kind is None:
        problem = f"is required; use one of {available}"
    else:
        problem = (
            f"{kind!r} is not a checkpoint storage type; use one of {available} "
            f"({', '.join(_UNAVAILABLE_TYPES)} are not available in this build)"
        )
    raise _invalid(where, [ErrorDetail(f"{where}.type", problem)])


def shared_fs_path(
    host_path: object, storage_path: object, *, where: str = "checkpoint_storage"
) -> Path:
    """Where ``shared_fs`` checkpoints go: ``host_path`` joined with ``storage_path``.

    As in Determined, ``host_path`` must be absolute and ``storage_path`` must be relative or
    an absolute path inside ``host_path``; either way it may not climb out of ``host_path``.
    """
    problems: list[ErrorDetail] = []
    if host_path is None:
        problems.append(ErrorDetail(f"{where}.host_path", "is required for type shared_fs"))
    elif not isinstance(host_path, str | Path) or not posixpath.isabs(str(host_path)):
        problems.append(
            ErrorDetail(f"{where}.host_path", f"must be an absolute path, got {host_path!r}")
        )
    if storage_path is not None and not isinstance(storage_path, str | Path):
        problems.append(
            ErrorDetail(f"{where}.storage_path", f"must be a path, got {storage_path!r}")
        )
    if problems:
        raise _invalid(where, problems)
    host = posixpath.normpath(str(host_path))
    if storage_path is None:
        return Path(host)
    full = posixpath.normpath(posixpath.join(host, str(storage_path)))
    if full != host and not full.startswith(host.rstrip("/") + "/"):
        raise _invalid(
            where,
            [
                ErrorDetail(
                    f"{where}.storage_path",
                    "storage_path must either be a relative directory or a subdirectory of "
                    f"host_path: {str(storage_path)!r} under host_path {host!r} leads to {full!r}",
                )
            ],
        )
    return Path(full)


def _directory_path(container_path: object, *, where: str) -> Path:
    if container_path is None:
        problem = "is required for type directory"
    elif not isinstance(container_path, str | Path) or not posixpath.isabs(str(container_path)):
        problem = f"must be an absolute path, got {container_path!r}"
    else:
        return Path(posixpath.normpath(str(container_path)))
    raise _invalid(where, [ErrorDetail(f"{where}.container_path", problem)])


def _field(cfg: Mapping[str, Any] | Any, key: str) -> Any:
    if isinstance(cfg, Mapping):
        return cfg.get(key)
    return getattr(cfg, key, None)


def _invalid(where: str, problems: list[ErrorDetail]) -> InvalidConfig:
    n = len(problems)
    return InvalidConfig(f"invalid {where}: {n} problem{'' if n == 1 else 's'}", problems)
