"""Checkpoint storage sections: ``shared_fs`` (the default), ``directory``, ``s3``, ``gcs``,
``azure``; a union chosen by ``type``."""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, Tag

from assay.config._base import ConfigModel, Problem, show, tagged
from assay.config._limits import DB_INT_MAX, MAX_PATH

NonNegative = Annotated[int, Field(ge=0, le=DB_INT_MAX)]
PathText = Annotated[str, Field(max_length=MAX_PATH)]
"""A path, or a name that becomes part of one (a bucket, a prefix)."""


class _StorageBase(ConfigModel):
    """The garbage-collection policy every storage type takes: how many checkpoints to keep."""

    save_experiment_best: NonNegative = 0
    save_trial_best: NonNegative = 1
    save_trial_latest: NonNegative = 1


class SharedFSConfig(_StorageBase):
    """A directory on a file system every agent mounts at the same path.

    Checkpoints go to ``host_path/storage_path`` (``storage_path`` relative to ``host_path``, or
    an absolute path inside it).
    """

    type: Literal["shared_fs"] = "shared_fs"
    host_path: PathText
    storage_path: PathText | None = None
    propagation: PathText = "rprivate"
    container_path: PathText | None = None
    checkpoint_path: PathText | None = None
    tensorboard_path: PathText | None = None

    @classmethod
    def _cross_checks(cls, data: dict[str, Any]) -> list[Problem]:
        host, storage = data.get("host_path"), data.get("storage_path")
        if not isinstance(host, str) or not isinstance(storage, str):
            return []
        if _inside(host, storage):
            return []
        return [
            (
                ("storage_path",),
                f"must be a relative directory or a subdirectory of host_path ({host}), "
                f"got {show(storage)}",
            )
        ]

    def directory(self) -> Path:
        """Where checkpoints are written."""
        if self.storage_path is None:
            return Path(self.host_path)
        return Path(self.host_path) / self.storage_path


def _inside(host: str, storage: str) -> bool:
    if posixpath.isabs(storage):
        host_n, storage_n = posixpath.normpath(host), posixpath.normpath(storage)
        return storage_n == host_n or storage_n.startswith(host_n.rstrip("/") + "/")
    normal = posixpath.normpath(storage)
    return normal != ".." and not normal.startswith("../")


class DirectoryConfig(_StorageBase):
    """A path inside the trial's environment (already mounted by other means)."""

    type: Literal["directory"] = "directory"
    container_path: PathText


def _prefix_problems(data: dict[str, Any]) -> list[Problem]:
    prefix = data.get("prefix")
    if isinstance(prefix, str) and ".." in prefix.split("/"):
        return [(("prefix",), f"must not contain a .. component (/../), got {show(prefix)}")]
    return []


class S3Config(_StorageBase):
    """An S3 (or S3-compatible, with ``endpoint_url``) bucket."""

    type: Literal["s3"] = "s3"
    bucket: PathText
    access_key: PathText | None = None
    secret_key: PathText | None = None
    endpoint_url: PathText | None = None
    prefix: PathText | None = None

    @classmethod
    def _cross_checks(cls, data: dict[str, Any]) -> list[Problem]:
        return _prefix_problems(data)


class GCSConfig(_StorageBase):
    """A Google Cloud Storage bucket."""

    type: Literal["gcs"] = "gcs"
    bucket: PathText
    prefix: PathText | None = None

    @classmethod
    def _cross_checks(cls, data: dict[str, Any]) -> list[Problem]:
        return _prefix_problems(data)


class AzureConfig(_StorageBase):
    """An Azure Blob Storage container, reached by ``connection_string`` or ``account_url``
    (exactly one), with an optional ``credential`` for the latter."""

    type: Literal["azure"] = "azure"
    container: str
    connection_string: str | None = None
    account_url: str | None = None
    credential: str | None = None

    @classmethod
    def _cross_checks(cls, data: dict[str, Any]) -> list[Problem]:
        problems: list[Problem] = []
        has_conn, has_url = "connection_string" in data, "account_url" in data
        if has_conn == has_url:
            problems.append(((), "exactly one of connection_string or account_url must be set"))
        if has_conn and "credential" in data:
            problems.append((("credential",), "must not be set together with connection_string"))
        return problems


CheckpointStorageConfig = Annotated[
    Annotated[SharedFSConfig, Tag("<shared_fs>")]
    | Annotated[DirectoryConfig, Tag("<directory>")]
    | Annotated[S3Config, Tag("<s3>")]
    | Annotated[GCSConfig, Tag("<gcs>")]
    | Annotated[AzureConfig, Tag("<azure>")],
    tagged(
        "type",
        {t: f"<{t}>" for t in ("shared_fs", "directory", "s3", "gcs", "azure")},
        "checkpoint storage type",
    ),
]
"""Where checkpoints are stored; chosen by ``type``."""


def default_checkpoint_storage(assay_home: Path) -> SharedFSConfig:
    """The storage used when neither the experiment nor the master names one."""
    return SharedFSConfig(host_path=str(assay_home / "checkpoints"))
