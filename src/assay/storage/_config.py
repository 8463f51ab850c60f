"""Building a storage manager from the ``checkpoint_storage`` section of a config."""

from __future__ import annotations

import importlib.util
import posixpath
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from assay.errors import ErrorDetail, InvalidConfig
from assay.storage._base import StorageManager
from assay.storage._local import DirectoryStorage, SharedFSStorage
from assay.storage._reach import EndpointLimit

AVAILABLE_STORAGE_TYPES = ("shared_fs", "directory", "s3", "gcs", "azure")
"""Checkpoint storage types this build can use (the object stores once their extra is
installed)."""

LOCAL_STORAGE_TYPES = ("shared_fs", "directory")
"""The types that keep checkpoints in a directory every machine reaches at the same path."""

_LIBRARIES = {
    "s3": ("boto3", "s3"),
    "gcs": ("google.cloud.storage", "gcs"),
    "azure": ("azure.storage.blob", "azure"),
}
"""Each object store's library, and the extra of assay that installs it."""


def storage_from_config(
    cfg: Mapping[str, Any] | Any,
    *,
    where: str = "checkpoint_storage",
    limit: EndpointLimit | None = None,
) -> StorageManager:
    """The storage manager a ``checkpoint_storage`` section describes.

    ``cfg`` is the JSON form (``{"type": "shared_fs", "host_path": ..., "storage_path": ...}``
    or ``{"type": "directory", "container_path": ...}``) or any object with those attributes,
    such as a config model. Keys that do not choose the location (``save_trial_best``,
    ``propagation``...) are ignored here. ``where`` is the dotted path reported in errors.
    ``limit``: the object-store endpoints the storage may contact (the master's, see
    :mod:`assay.storage._reach`); None for a process of the config's owner.

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
    if kind in _LIBRARIES:
        return _object_storage(cfg, str(kind), where=where, limit=limit)
    available = ", ".join(AVAILABLE_STORAGE_TYPES)
    if kind is None:
        problem = f"is required; use one of {available}"
    else:
        problem = f"{kind!r} is not a checkpoint storage type; use one of {available}"
    raise _invalid(where, [ErrorDetail(f"{where}.type", problem)])


def _object_storage(
    cfg: Mapping[str, Any] | Any, kind: str, *, where: str, limit: EndpointLimit | None
) -> StorageManager:
    module, extra = _LIBRARIES[kind]
    if not _importable(module):
        raise _invalid(
            where,
            [
                ErrorDetail(
                    f"{where}.type",
                    f"storage type {kind!r} needs the {module} package, which is not installed "
                    f"here; install it with: pip install 'assay[{extra}]'",
                )
            ],
        )
    if kind == "s3":
        return _s3(cfg, where=where, limit=limit)
    if kind == "gcs":
        from assay.storage._gcs import GCSStorage

        return GCSStorage(
            _text(cfg, "bucket", where=where, required=True) or "",
            prefix=_prefix(cfg, where=where),
        )
    from assay.storage._azure import AzureStorage

    if _field(cfg, "connection_string") is not None and _field(cfg, "credential") is not None:
        raise _invalid(
            where,
            [
                ErrorDetail(
                    f"{where}.credential",
                    "credential and connection_string must not both be set: a connection "
                    "string carries its own key; give account_url with credential instead",
                )
            ],
        )
    return AzureStorage(
        _text(cfg, "container", where=where, required=True) or "",
        connection_string=_text(cfg, "connection_string", where=where),
        account_url=_text(cfg, "account_url", where=where),
        credential=_text(cfg, "credential", where=where),
        limit=limit,
    )


def _s3(cfg: Mapping[str, Any] | Any, *, where: str, limit: EndpointLimit | None) -> StorageManager:
    from assay.storage._s3 import S3Storage

    access, secret = _text(cfg, "access_key", where=where), _text(cfg, "secret_key", where=where)
    if (access is None) != (secret is None):
        given, missing = (
            ("access_key", "secret_key") if secret is None else ("secret_key", "access_key")
        )
        raise _invalid(
            where,
            [
                ErrorDetail(
                    f"{where}.{missing}",
                    f"is required when {given} is set (or leave both out to use the "
                    "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY variables)",
                )
            ],
        )
    return S3Storage(
        _text(cfg, "bucket", where=where, required=True) or "",
        prefix=_prefix(cfg, where=where),
        access_key=access,
        secret_key=secret,
        endpoint_url=_text(cfg, "endpoint_url", where=where),
        limit=limit,
    )


def _prefix(cfg: Mapping[str, Any] | Any, *, where: str) -> str | None:
    """The object-key prefix; like Determined, one that climbs (a ``..`` part) is refused."""
    prefix = _text(cfg, "prefix", where=where)
    if prefix is not None and ".." in prefix.split("/"):
        raise _invalid(
            where,
            [
                ErrorDetail(
                    f"{where}.prefix",
                    f"prefix cannot contain a '..' part, got {prefix!r}; give a path inside "
                    "the bucket such as 'checkpoints/team-a'",
                )
            ],
        )
    return prefix


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a missing parent package, or one stubbed out as None
        return False


def _text(
    cfg: Mapping[str, Any] | Any, key: str, *, where: str, required: bool = False
) -> str | None:
    value = _field(cfg, key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        problem = "is required" if value is None else f"must be a non-empty string, got {value!r}"
        raise _invalid(where, [ErrorDetail(f"{where}.{key}", problem)])
    return value


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
