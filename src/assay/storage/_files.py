"""Files kept by key beside the checkpoints: TensorBoard's event files.

Checkpoints are immutable directories named by a uuid (:class:`~assay.storage.StorageManager`);
TensorBoard's files are not: they appear while a trial trains and grow as it writes. A storage
that can keep them also implements :class:`FileStore`, whose keys are relative ``/``-separated
paths (``tensorboard/<experiment>/<trial>/...``) under the same root as the checkpoints.

An object store implements :meth:`FileStore.put_file` by uploading the whole file (it may
ignore ``append_from``), :meth:`FileStore.list_keys` by listing the prefix, and answers
``None`` from :meth:`FileStore.local_path`.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Protocol, runtime_checkable

from assay.errors import InvalidRequest

TENSORBOARD_PREFIX = "tensorboard"
"""The top directory of TensorBoard's files in a storage."""


def tensorboard_key(experiment_id: int, trial_id: int) -> str:
    """The key prefix of one trial's TensorBoard files."""
    return f"{TENSORBOARD_PREFIX}/{experiment_id}/{trial_id}"


@runtime_checkable
class FileStore(Protocol):
    """Keyed files beside the checkpoints, overwritten or grown in place.

    Contract (checked by :class:`assay.storage.testing.FileStoreConformance`):

    - :meth:`put_file` makes the key hold exactly the bytes of ``src``. With ``append_from``
      N > 0 the caller says the key already holds the first N bytes of ``src`` (the file only
      grew since it was last put); a store may then send only the rest. A reader never sees
      fewer bytes than the key held before.
    - :meth:`list_keys` maps every key under ``prefix`` to its size (files only).
    - :meth:`get_file` writes the bytes a key holds to a local file.
    - :meth:`delete_prefix` removes every key under ``prefix``; afterwards :meth:`list_keys`
      of it is empty, and keys beside it are untouched.
    - A key must be a relative path without ``..``, empty parts or a leading dot in any part;
      anything else raises :class:`~assay.errors.InvalidRequest` before storage is touched.
    """

    def put_file(self, src: Path, key: str, *, append_from: int = 0) -> None:
        """Store the file ``src`` under ``key``."""
        ...

    def list_keys(self, prefix: str) -> dict[str, int]:
        """Key -> size of every file stored under the directory ``prefix``."""
        ...

    def delete_prefix(self, prefix: str) -> None:
        """Remove every key under the directory ``prefix`` (nothing there is not an error)."""
        ...

    def get_file(self, key: str, dst: Path, size: int) -> None:
        """Write the file stored under ``key`` (``size`` bytes, as :meth:`list_keys` said) to
        ``dst``, replacing any file there."""
        ...

    def local_path(self, key: str) -> Path | None:
        """Where a process on a machine that mounts this storage reads ``key`` directly;
        None for a store that is not a file system (an object store)."""
        ...


def check_key(key: str) -> str:
    """``key`` if it is a plain relative path; else :class:`~assay.errors.InvalidRequest`."""
    parts = key.split("/") if isinstance(key, str) else []
    bad = (
        not parts
        or any(not p or p.startswith(".") or "\\" in p for p in parts)
        or any(ord(c) < 32 or ord(c) == 127 for c in key)
    )
    if bad:
        raise InvalidRequest(
            f"storage key {key!r} is not a plain relative path; expected names joined by '/', "
            "none empty or starting with '.'"
        )
    return key


class LocalFiles:
    """:class:`FileStore` on a directory of a local or shared file system (``base``).

    A key is reached only through real directories under ``base``: a link on its way (trial
    code writes this storage) is refused, so a reader or deleter with other rights than the
    writer's is never led outside ``base``."""

    base: Path

    def _path(self, key: str) -> Path:
        path = self.base
        parts = check_key(key).split("/")
        for i, part in enumerate(parts):
            path = path / part
            try:
                mode = os.lstat(path).st_mode
            except FileNotFoundError:
                break  # nothing further exists to lead anywhere
            if stat.S_ISLNK(mode) or (i < len(parts) - 1 and not stat.S_ISDIR(mode)):
                raise InvalidRequest(
                    f"storage key {key!r} leads through {path}, which is a link or not a "
                    "directory; keys are reached only through directories of the storage"
                )
        return self.base.joinpath(*parts)

    def put_file(self, src: Path, key: str, *, append_from: int = 0) -> None:
        dst = self._path(key)
        dst.parent.mkdir(parents=True, exist_ok=True)
        held = dst.stat().st_size if dst.is_file() else -1
        if append_from > 0 and held == append_from:
            # TensorBoard keeps reading an event file it has open: growing the same file lets
            # it see the new records, where replacing it would hide them.
            with src.open("rb") as reader, dst.open("ab") as writer:
                reader.seek(append_from)
                shutil.copyfileobj(reader, writer)
            return
        fd, tmp = tempfile.mkstemp(dir=dst.parent, prefix=f".{dst.name}.", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as writer, src.open("rb") as reader:
                shutil.copyfileobj(reader, writer)
            os.chmod(tmp, 0o644)
            os.replace(tmp, dst)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def list_keys(self, prefix: str) -> dict[str, int]:
        root = self._path(prefix)
        if not root.is_dir():
            return {}
        found = {}
        for current, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            for name in files:
                if name.startswith("."):
                    continue  # an upload in progress
                path = Path(current, name)
                found[path.relative_to(self.base).as_posix()] = path.stat().st_size
        return dict(sorted(found.items()))

    def get_file(self, key: str, dst: Path, size: int) -> None:
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self._path(key), dst, follow_symlinks=False)

    def delete_prefix(self, prefix: str) -> None:
        root = self._path(prefix)
        if root.is_dir():
            shutil.rmtree(root)
        elif root.exists():
            root.unlink()

    def local_path(self, key: str) -> Path | None:
        return self._path(key)
