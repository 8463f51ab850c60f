"""Checkpoint storage sections: ``shared_fs`` (the default), ``directory``, ``s3``, ``gcs``,
``azure``; a union chosen by ``type``. A section without ``type`` holds only the
garbage-collection policy and inherits the master's storage (as Determined's does)."""

from __future__ import annotations

import posixpath
import urllib.parse
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Discriminator, Field, Tag

from assay.config._base import ConfigModel, Problem, config_error, show, tagged
from assay.config._limits import DB_INT_MAX, MAX_PATH

NonNegative = Annotated[int, Field(ge=0, le=DB_INT_MAX)]
PathText = Annotated[str, Field(max_length=MAX_PATH)]


def _server_url(value: str) -> str:
    # A scheme other than http(s) (file://) or a user part (a key written into the URL, where
    # logs and configs show it) is refused with its reason. A bare name stays accepted, as
    # Determined's schema takes it (its storage then says what is wrong where it is used).
    try:
        parts = urllib.parse.urlsplit(value)
    except ValueError:
        parts = None
    if parts is None or (parts.scheme and parts.scheme.lower() not in ("http", "https")):
        raise config_error(
            f"must be an http(s) URL such as https://minio.example:9000, got {show(value)}"
        )
    if "@" in parts.netloc:
        raise config_error(
            "must not carry a user or key in the URL; give the keys as access_key and "
            "secret_key (or credential)"
        )
    return value


ServerUrl = Annotated[PathText, AfterValidator(_server_url)]
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
    endpoint_url: ServerUrl | None = None
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
    account_url: ServerUrl | None = None
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


_INHERIT = "master_default"


class InheritedStorageConfig(_StorageBase):
    """A section without ``type``: the master's storage, with the GC keys given here."""

    # Its other keys get one problem each from the cross checks, which say what to do.
    model_config = ConfigDict(extra="ignore")
    type: Literal["master_default"] = "master_default"

    @classmethod
    def _cross_checks(cls, data: dict[str, Any]) -> list[Problem]:
        gc = {"type", *_StorageBase.model_fields}
        return [
            (
                (key,),
                "needs checkpoint_storage.type (shared_fs, directory, s3, gcs or azure); "
                "without a type the section holds only save_experiment_best, save_trial_best "
                "and save_trial_latest and the master's storage is used",
            )
            for key in data
            if key not in gc
        ]


def _mark_inherited(value: Any) -> Any:
    # A type-less section is told apart before the union picks its member by ``type``.
    if isinstance(value, dict) and value.get("type") is None:
        return {**value, "type": _INHERIT}
    return value


def _storage_types() -> Discriminator:
    types = ("shared_fs", "directory", "s3", "gcs", "azure")
    chosen = tagged("type", {t: f"<{t}>" for t in (_INHERIT, *types)}, "checkpoint storage type")
    # The inherited member is what a missing type means, never a type to offer.
    assert isinstance(chosen.custom_error_context, dict)
    chosen.custom_error_context["expected"] = ", ".join(types)
    return chosen


CheckpointStorageConfig = Annotated[
    Annotated[InheritedStorageConfig, Tag("<master_default>")]
    | Annotated[SharedFSConfig, Tag("<shared_fs>")]
    | Annotated[DirectoryConfig, Tag("<directory>")]
    | Annotated[S3Config, Tag("<s3>")]
    | Annotated[GCSConfig, Tag("<gcs>")]
    | Annotated[AzureConfig, Tag("<azure>")],
    _storage_types(),
    BeforeValidator(_mark_inherited),
]
"""Where checkpoints are stored; chosen by ``type`` (none: the master's storage)."""


def default_checkpoint_storage(assay_home: Path) -> SharedFSConfig:
    """The storage used when neither the experiment nor the master names one."""
    return SharedFSConfig(host_path=str(assay_home / "checkpoints"))


def resolve_checkpoint_storage(storage: Any, master_storage: Any, assay_home: Path) -> Any:
    """The storage an experiment uses: its own; or, given none or only GC keys (no ``type``),
    the master's (``master.yaml``'s ``checkpoint_storage``, else ``ASSAY_HOME/checkpoints``)
    with the GC keys it gave."""
    base = master_storage
    if base is None or isinstance(base, InheritedStorageConfig):
        base = _merged(default_checkpoint_storage(assay_home), base)
    if storage is None:
        return base
    if isinstance(storage, InheritedStorageConfig):
        return _merged(base, storage)
    return storage


def _merged(base: Any, policy: InheritedStorageConfig | None) -> Any:
    if policy is None:
        return base
    keys = policy.model_fields_set - {"type"}
    return base.model_copy(update={k: getattr(policy, k) for k in keys})
