"""Which checkpoint storage the master touches for an experiment, and how far into it.

The master serves checkpoint files to users and deletes them, with its own rights, in the
storage an experiment's config names: storage its owner chose, holding what its trials wrote.
So whatever an experiment says, the master reaches only checkpoints' own directories, under
roots an admin allowed, and never its own files:

- a file-system storage (``shared_fs``'s ``host_path`` with ``storage_path``, ``directory``'s
  ``container_path``) must lie under a root of ``allowed_checkpoint_storage.host_paths`` in
  master.yaml, or be the master's own checkpoint storage (the only root by default); this is
  checked at submission and again, links resolved, every time the master reads or deletes;
- the master's home (``ASSAY_HOME``, but for its ``checkpoints`` directory) is never inside
  such a storage, nor such a storage inside it;
- a checkpoint is a UUID (as the harness makes them) naming a real directory directly under
  the storage's base (:class:`~assay.storage.SharedFSStorage` refuses a link in its place);
- the master's own files (its database, tokens, admin password, TLS key) are never served,
  even hard-linked into a checkpoint: a served file is compared, by device and inode, with
  them;
- an object store is contacted only on a server the admin named
  (:mod:`assay.master.kernel._storage_endpoints`): every storage built here carries that limit.

Determined deletes checkpoint files from a task on an agent; assay's master deletes them
itself, which is why it keeps to these bounds.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.config import MasterConfig, resolve_checkpoint_storage
from assay.errors import ErrorDetail, Forbidden, InvalidConfig
from assay.master.kernel._storage_endpoints import endpoint_limit
from assay.protocol import check_checkpoint_uuid
from assay.storage import (
    LOCAL_STORAGE_TYPES,
    DirectoryStorage,
    EndpointLimit,
    StorageManager,
    shared_fs_path,
    storage_from_config,
)

SECRET_DIRS = ("", "run")
"""The directories of the master's home whose files are its secrets (tokens, the admin's
password, the SQLite database): never served, whatever links lead to them."""

_SQLITE_PREFIXES = ("sqlite:///", "sqlite+pysqlite:///")


@dataclass(frozen=True)
class StorageAccess:
    """The bounds of the module's doc, for one master."""

    roots: tuple[Path, ...]
    """Where file-system storage may lie (as configured; links are resolved when checked)."""
    home: Path
    own: Path | None
    """The master's own file-system storage, when it has one."""
    secret_files: tuple[Path, ...]
    """Files outside the home that are the master's secrets (a database, a TLS key)."""
    endpoints: EndpointLimit
    """The object-store servers the master contacts
    (:mod:`assay.master.kernel._storage_endpoints`)."""

    @classmethod
    def of(cls, settings: MasterConfig, assay_home: Path) -> StorageAccess:
        own = base_of(resolve_checkpoint_storage(None, settings.checkpoint_storage, assay_home))
        roots = [*settings.allowed_checkpoint_storage.host_paths]
        if own is not None:
            roots.append(own)
        secrets: list[Path] = []
        if settings.tls is not None:
            secrets += [settings.tls.cert, settings.tls.key]
        database = _sqlite_file(settings.db)
        if database is not None:
            secrets += [database, Path(f"{database}-wal"), Path(f"{database}-shm")]
        return cls(
            tuple(dict.fromkeys(roots)),
            assay_home,
            own,
            tuple(secrets),
            endpoint_limit(settings),
        )

    # -- at submission ---------------------------------------------------------------------

    def problems(self, storage: Any, where: str = "checkpoint_storage") -> list[ErrorDetail]:
        """Why an experiment may not name ``storage`` (a config model or its JSON), each
        problem at its key; empty when it may."""
        kind = _kind(storage)
        if kind not in LOCAL_STORAGE_TYPES:
            return []  # an object store: reached through its own API, never a local path
        key = f"{where}.{'host_path' if kind == 'shared_fs' else 'container_path'}"
        try:
            base = base_of(storage, where=where)
        except InvalidConfig as exc:
            return list(exc.details)
        problem = self._problem(base) if base is not None else None
        return [ErrorDetail(key, problem)] if problem else []

    # -- when the master reads or deletes ------------------------------------------------

    def manager(self, storage: Mapping[str, Any]) -> StorageManager:
        """The storage an experiment's stored config names, for the master to read or delete
        in; :class:`~assay.errors.Forbidden` when it is (no longer) within bounds, such as a
        storage stored before those bounds, or a link made in the meantime."""
        config = dict(storage)
        manager = storage_from_config(config, limit=self.endpoints)
        base = base_of(config)
        problem = self._problem(base) if base is not None else None
        if problem:
            raise Forbidden(f"the master does not touch this checkpoint storage: {problem}")
        return manager

    def checkpoint(self, uuid: str) -> str:
        """``uuid`` if the master may read or delete a checkpoint by that name: a UUID as the
        harness makes them (a row registered before ids were checked may hold anything)."""
        return check_checkpoint_uuid(uuid, "checkpoint")

    def secrets(self) -> frozenset[tuple[int, int]]:
        """(device, inode) of each of the master's secret files there is now."""
        found: set[tuple[int, int]] = set()
        for path in [*self._home_files(), *self.secret_files]:
            try:
                st = os.stat(path)
            except OSError:
                continue
            found.add((st.st_dev, st.st_ino))
        return frozenset(found)

    # -- internals --------------------------------------------------------------------------

    def _problem(self, base: Path) -> str | None:
        real = Path(os.path.realpath(base))
        home = Path(os.path.realpath(self.home))
        own = Path(os.path.realpath(self.own)) if self.own is not None else None
        if not (own is not None and _within(real, own)):
            where = _relation(real, home)
            if where is not None:
                # Neither the home's path nor where a link leads is shown: a user needs no map
                # of the master's machine to choose another directory.
                return (
                    f"{base} {where if real == base else 'leads to what ' + where} the master's "
                    "home, which checkpoint storage may not reach (but for its checkpoints "
                    "directory); choose a directory outside it"
                )
        shown = str(base) if real == base else f"{base} (which leads to {real})"
        if not any(_within(real, Path(os.path.realpath(root))) for root in self.roots):
            allowed = ", ".join(str(root) for root in self.roots) or "none"
            return (
                f"{shown} is not under a checkpoint storage root this master allows "
                f"({allowed}); an admin allows more in master.yaml under "
                "allowed_checkpoint_storage.host_paths"
            )
        return None

    def _home_files(self) -> Iterable[Path]:
        for name in SECRET_DIRS:
            directory = self.home / name
            try:
                entries = list(os.scandir(directory))
            except OSError:
                continue
            yield from (Path(e.path) for e in entries if e.is_file(follow_symlinks=False))


def base_of(storage: Any, *, where: str = "checkpoint_storage") -> Path | None:
    """The directory a file-system storage (a config model or its JSON) keeps checkpoints
    in, as configured; None for an object store. Raises :class:`InvalidConfig` for a path
    the storage itself refuses."""
    kind = _kind(storage)
    if kind == "shared_fs":
        return shared_fs_path(
            _field(storage, "host_path"), _field(storage, "storage_path"), where=where
        )
    if kind == "directory":
        path = _field(storage, "container_path")
        manager = storage_from_config({"type": "directory", "container_path": path}, where=where)
        assert isinstance(manager, DirectoryStorage)
        return manager.base
    return None


def _relation(path: Path, home: Path) -> str | None:
    """How ``path`` meets the master's home, in words; None when apart."""
    if path == home:
        return "is"
    if _within(home, path):
        return "holds"
    if _within(path, home):
        return "is inside"
    return None


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _kind(storage: Any) -> Any:
    kind = _field(storage, "type")
    return getattr(kind, "value", kind)  # an enum member from a config model


def _field(storage: Any, key: str) -> Any:
    if isinstance(storage, Mapping):
        return storage.get(key)
    return getattr(storage, key, None)


def _sqlite_file(url: str | None) -> Path | None:
    for prefix in _SQLITE_PREFIXES:
        if url and url.startswith(prefix):
            path = url[len(prefix) :].split("?", 1)[0]
            return Path(path) if path and path != ":memory:" else None
    return None
