"""The checkpoint storage protocol and the rules every implementation shares."""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol, runtime_checkable

from assay.errors import InvalidRequest

_MAX_NAME = 255

Progress = Callable[[int], None]
"""Told the number of bytes just moved by an upload or download (possibly from several
threads at once), to show progress."""


@runtime_checkable
class StorageManager(Protocol):
    """Where checkpoints live: one directory tree per checkpoint uuid.

    Contract (checked for every implementation by :mod:`assay.storage.testing`):

    - A checkpoint becomes visible under its uuid all at once: after :meth:`store_path` exits
      cleanly or :meth:`upload` returns. A failed write leaves nothing under the uuid and no
      partial copy anywhere a reader could see it.
    - Checkpoints are immutable: storing under a uuid that already exists raises
      :class:`~assay.errors.Conflict` and leaves the existing checkpoint untouched.
    - Every method except :meth:`exists` raises :class:`~assay.errors.NotFound`, naming the
      uuid, when it reads or deletes a uuid that is not stored; ``exists`` answers ``False``.
    - A uuid must be a plain name (see :func:`check_uuid`); anything else raises
      :class:`~assay.errors.InvalidRequest` before storage is touched.
    - :meth:`list_files` maps every path in the checkpoint, relative and ``/``-separated, to
      its size in bytes; directories appear with a trailing ``/`` and size 0, so empty
      directories survive a round trip.
    - :meth:`upload` and :meth:`download` call ``progress`` (when given) with each count of
      bytes moved; together the counts add up to the checkpoint's size.
    """

    def store_path(self, uuid: str) -> AbstractContextManager[Path]:
        """A fresh empty directory to write the checkpoint into; committed under ``uuid`` when
        the block exits cleanly, discarded when it raises."""
        ...

    def upload(self, src: Path, uuid: str, *, progress: Progress | None = None) -> None:
        """Copy the directory ``src`` in as checkpoint ``uuid``."""
        ...

    def download(self, uuid: str, dst: Path, *, progress: Progress | None = None) -> None:
        """Copy checkpoint ``uuid`` into the directory ``dst`` (created if missing; files of
        the same name there are overwritten)."""
        ...

    def restore_path(self, uuid: str) -> AbstractContextManager[Path]:
        """A local directory holding checkpoint ``uuid``, for reading only, valid inside the
        block. Storage on a local or shared file system hands out the directory itself."""
        ...

    def delete(self, uuid: str) -> None:
        """Remove checkpoint ``uuid``; it disappears from view at once."""
        ...

    def list_files(self, uuid: str) -> dict[str, int]:
        """Relative path -> size in bytes of everything in checkpoint ``uuid``."""
        ...

    def exists(self, uuid: str) -> bool:
        """Whether checkpoint ``uuid`` is stored."""
        ...


def check_uuid(uuid: str) -> str:
    """``uuid`` if it is a plain name usable as one directory name; else
    :class:`~assay.errors.InvalidRequest`.

    A leading dot is refused too: implementations keep their in-progress writes under
    dot-names, so no checkpoint can collide with one.
    """
    problem = _uuid_problem(uuid)
    if problem:
        raise InvalidRequest(
            f"checkpoint uuid {uuid!r} {problem}; expected a plain name such as a UUID "
            "(letters, digits, '-', '_', '.', not starting with '.')"
        )
    return uuid


def _uuid_problem(uuid: object) -> str:
    if not isinstance(uuid, str):
        return f"is a {type(uuid).__name__}, not a string"
    if not uuid:
        return "is empty"
    if len(uuid) > _MAX_NAME:
        return f"is {len(uuid)} characters long, over {_MAX_NAME}"
    if "/" in uuid or "\\" in uuid:
        return "contains a path separator"
    if ".." in uuid:
        return "contains '..'"
    if uuid.startswith("."):
        return "starts with '.'"
    if any(ord(c) < 32 or ord(c) == 127 for c in uuid):
        return "contains a control character"
    return ""


def list_directory(root: Path) -> dict[str, int]:
    """Every path under ``root``, relative and ``/``-separated, to its size; directories as
    ``name/`` with size 0. Symlinks are listed, not followed, with the size of the link."""
    listing: dict[str, int] = {}
    for current, dirs, files in os.walk(root):
        rel_dir = Path(current).relative_to(root).as_posix()
        prefix = "" if rel_dir == "." else f"{rel_dir}/"
        for name in dirs:
            path = Path(current, name)
            if path.is_symlink():
                listing[f"{prefix}{name}"] = path.lstat().st_size
            else:
                listing[f"{prefix}{name}/"] = 0
        for name in files:
            listing[f"{prefix}{name}"] = Path(current, name).lstat().st_size
    return dict(sorted(listing.items()))
