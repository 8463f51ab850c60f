"""Extracting tar members safely on every Python assay runs on.

Python 3.11.4 added tarfile's extraction filters (PEP 706) and ``TarInfo.replace``; Debian 12's
own Python is 3.11.2, without them, and a trial's context or a checkpoint must unpack there too.
Where tarfile has the filters, a member goes through the ``data`` filter. Where it has not, the
filter's refusals that matter after the callers' own checks of the archive are made here, before
tarfile writes the member: nothing lands outside the destination or is written through a link
already on disk, a symbolic link points inside the destination, and only regular files,
directories and links are written, without set-uid, set-gid or sticky bits.
"""

from __future__ import annotations

import copy
import os
import tarfile
import time
from typing import Any

__all__ = ["REFUSED", "UnsafeMember", "extract", "with_changes"]

HAS_FILTERS = hasattr(tarfile, "data_filter")


class UnsafeMember(tarfile.TarError):
    """A member refused where tarfile has no filters to refuse it."""


REFUSED: tuple[type[Exception], ...] = (
    (tarfile.FilterError, UnsafeMember) if HAS_FILTERS else (UnsafeMember,)  # type: ignore[attr-defined,unused-ignore]
)
"""What a refusal of :func:`extract` raises, on this Python."""


def with_changes(member: tarfile.TarInfo, **changes: Any) -> tarfile.TarInfo:
    """A shallow copy of ``member`` with ``changes`` (``TarInfo.replace``, where it exists);
    ``mtime=None`` leaves the modification time to the extraction."""
    if HAS_FILTERS:
        return member.replace(**changes, deep=False)
    changed = copy.copy(member)
    for name, value in changes.items():
        setattr(changed, name, time.time() if name == "mtime" and value is None else value)
    return changed


def extract(tar: tarfile.TarFile, member: tarfile.TarInfo, root: str) -> None:
    """Write ``member`` under the directory ``root`` (a real path), refusing what is unsafe."""
    if HAS_FILTERS:
        tar.extract(member, root, set_attrs=True, filter="data")
        return
    root = os.path.realpath(root)
    _refuse_unsafe(member, root)
    safe = copy.copy(member)
    # As the filter does: no set-uid, set-gid or sticky bit, no write for group or others.
    safe.mode = (member.mode & 0o755) | (0o700 if member.isdir() else 0)
    safe.uid, safe.gid = os.getuid(), os.getgid()
    safe.uname = safe.gname = ""
    tar.extract(safe, root, set_attrs=True)


def _inside(root: str, path: str) -> bool:
    return os.path.commonpath([root, path]) == root


def _refuse_unsafe(member: tarfile.TarInfo, root: str) -> None:
    if not (member.isreg() or member.isdir() or member.issym() or member.islnk()):
        raise UnsafeMember(f"{member.name!r} is not a file, directory or link")
    path = os.path.join(root, member.name)
    if not _inside(root, os.path.realpath(os.path.dirname(path))):
        raise UnsafeMember(f"{member.name!r} would be written outside the destination")
    if os.path.islink(path):
        raise UnsafeMember(f"{member.name!r} would be written through a link already there")
    if member.issym():
        target = os.path.realpath(os.path.join(os.path.dirname(path), member.linkname))
        if not _inside(root, target):
            raise UnsafeMember(f"{member.name!r} links outside the destination")
    if member.islnk():
        target = os.path.realpath(os.path.join(root, member.linkname))
        if not _inside(root, target):
            raise UnsafeMember(f"{member.name!r} links outside the destination")
