"""A checkpoint's files as the master serves them: one file, or a tar of the checkpoint (or of
one of its directories) made while it is sent, so no checkpoint is ever held in memory.

Links are sent as links, never followed: a checkpoint written by trial code may hold a link to
anything on the master's machine, and the master reads with its own rights. A regular file is
opened without following a link in its place, and sent with exactly the size it was listed
with (a file that shrank in between ends the stream, so the reader sees a broken archive
rather than a wrong one).
"""

from __future__ import annotations

import os
import stat
import tarfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from assay.errors import AssayError, Forbidden, InvalidRequest, NotFound
from assay.master.kernel import StorageAccess
from assay.storage import StorageManager

CHUNK = 1024 * 1024
"""How much of a file one piece of the stream carries."""

_BLOCK = tarfile.BLOCKSIZE
_SHOWN_NAMES = 10


def member_path(raw: str) -> str:
    """The path inside a checkpoint that ``raw`` names, ``/``-separated, without ``.``
    components; :class:`InvalidRequest` for an absolute path or one that climbs out."""
    if not raw.strip("/."):
        raise InvalidRequest(
            f"path {raw!r} names no file; give a path inside the checkpoint such as "
            "model/weights.pt, or leave path out for the whole checkpoint"
        )
    if raw.startswith("/"):
        raise InvalidRequest(
            f"path {raw!r} is absolute; give a path relative to the checkpoint's directory"
        )
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise InvalidRequest(
            f"path {raw!r} climbs out of the checkpoint ('..'); give a path inside it"
        )
    return "/".join(parts)


@dataclass(frozen=True)
class Selection:
    """What a request for a checkpoint's files gets: ``names`` (keys of the listing, a
    directory with its trailing ``/``) and whether it is one file rather than a tar."""

    uuid: str
    names: tuple[str, ...]
    single: bool
    size: int
    """The file's size (single), or the total of the files' sizes."""


def select(uuid: str, listing: Mapping[str, int], path: str | None) -> Selection:
    """The part of a checkpoint listed as ``listing`` that ``path`` asks for: all of it when
    None, one file, or a directory with everything under it."""
    if path is None:
        names = tuple(listing)
        return Selection(uuid, names, False, _total(listing, names))
    wanted = member_path(path)
    if wanted in listing:
        return Selection(uuid, (wanted,), True, listing[wanted])
    prefix = f"{wanted}/"
    if prefix in listing:
        names = tuple(n for n in listing if n.startswith(prefix))
        return Selection(uuid, names, False, _total(listing, names))
    files = [n for n in listing if not n.endswith("/")]
    shown = ", ".join(files[:_SHOWN_NAMES]) + (", ..." if len(files) > _SHOWN_NAMES else "")
    raise NotFound(
        f"checkpoint {uuid} has no file or directory {wanted!r}; it holds "
        f"{len(files)} file{'' if len(files) == 1 else 's'}: {shown or 'none'}"
    )


def open_inside(root: Path, name: str) -> int:
    """A descriptor of the regular file ``name`` under ``root``, opened one component at a
    time without following a link anywhere on the way: a directory of the checkpoint swapped
    for a link after it was listed (trial code may still be writing shared storage) cannot
    lead the master's read outside the checkpoint's own directory."""
    *dirs, last = PurePosixPath(name).parts
    nofollow = os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | nofollow)
    try:
        for part in dirs:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | nofollow, dir_fd=fd)
            os.close(fd)
            fd = inner
        leaf = os.open(last, os.O_RDONLY | nofollow, dir_fd=fd)
    finally:
        os.close(fd)
    if not stat.S_ISREG(os.fstat(leaf).st_mode):
        os.close(leaf)
        raise AssayError(f"{name} is no longer a regular file of the checkpoint")
    return leaf


def _total(listing: Mapping[str, int], names: tuple[str, ...]) -> int:
    return sum(listing[n] for n in names if not n.endswith("/"))


def open_storage(
    access: StorageAccess, config: Mapping[str, Any], uuid: str
) -> tuple[StorageManager, dict[str, int]]:
    """The storage holding checkpoint ``uuid`` and the checkpoint's listing there
    (:class:`NotFound`, naming the storage, when it is not there), within the bounds
    ``access`` sets (:class:`~assay.errors.Forbidden` beyond them)."""
    access.checkpoint(uuid)
    storage = access.manager(config)
    return storage, storage.list_files(uuid)


Secrets = frozenset[tuple[int, int]]
"""(device, inode) of files never sent, whatever leads to them (the master's own)."""


def stream(storage: StorageManager, selection: Selection, secrets: Secrets) -> Iterator[bytes]:
    """The bytes of ``selection``: the file's content, or a tar (POSIX pax) of its names."""
    with storage.restore_path(selection.uuid) as root:
        if selection.single:
            (name,) = selection.names
            yield from _content(root, name, selection.size, secrets)
        else:
            yield from tar_stream(root, selection.names, secrets)


def tar_stream(root: Path, names: tuple[str, ...], secrets: Secrets) -> Iterator[bytes]:
    """A tar of ``names`` under ``root``, made a member at a time."""
    for name in names:
        path = root / name.rstrip("/")
        info = tarfile.TarInfo(name.rstrip("/"))
        st = os.lstat(path)
        info.mtime = int(st.st_mtime)
        if stat.S_ISDIR(st.st_mode):
            info.type, info.mode = tarfile.DIRTYPE, 0o755
        elif stat.S_ISLNK(st.st_mode):
            info.type, info.mode, info.linkname = tarfile.SYMTYPE, 0o777, os.readlink(path)
        elif stat.S_ISREG(st.st_mode):
            info.mode = 0o755 if st.st_mode & stat.S_IXUSR else 0o644
            info.size = st.st_size
        else:
            continue  # a fifo or socket left in a checkpoint holds nothing to send
        yield info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")
        if info.isreg():
            yield from _content(root, name, info.size, secrets)
            if info.size % _BLOCK:
                yield b"\0" * (_BLOCK - info.size % _BLOCK)
    yield b"\0" * (2 * _BLOCK)


def _content(root: Path, name: str, size: int, secrets: Secrets) -> Iterator[bytes]:
    fd = open_inside(root, name)
    st = os.fstat(fd)
    if (st.st_dev, st.st_ino) in secrets:
        os.close(fd)
        raise Forbidden(f"{name} is one of the master's own files (linked in); it is not sent")
    with os.fdopen(fd, "rb") as f:
        left = size
        while left:
            piece = f.read(min(CHUNK, left))
            if not piece:
                raise AssayError(f"{name} is shorter than the {size} bytes it was listed with")
            left -= len(piece)
            yield piece
