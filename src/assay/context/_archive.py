"""Checking a context archive (the master, before storing it) and unpacking it (the agent).

Both read the archive as a stream through :class:`BoundedGunzip` and judge each member with
:class:`MemberChecker` before its data is touched. Extraction validates the whole archive first,
then unpacks in a second pass, so a bad member late in the archive leaves nothing behind; it
never trusts that the master checked.
"""

from __future__ import annotations

import hashlib
import os
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from assay import tarsafe
from assay.context._members import MemberChecker, MemberInfo
from assay.context._paths import encoded_len, shown
from assay.context._sizes import (
    DEFAULT_CONTEXT_LIMIT,
    PATH_MAX,
    archive_limit,
    archive_too_large_message,
)
from assay.context._stream import BoundedGunzip
from assay.errors import InvalidContext, TooLarge

# Allowance for what a tar stream holds besides file data: a header block, padding and often a
# PAX record per member, plus the end-of-archive record and read-ahead.
_OVERHEAD_PER_MEMBER = 3 * 1024
_OVERHEAD_FIXED = 1024 * 1024


@dataclass(frozen=True)
class ContextInfo:
    """What an accepted archive holds: ``files`` counts regular files and links (not
    directories), ``size`` is the uncompressed total of file data, ``sha256`` is the digest of
    the archive bytes (what contexts are deduplicated by)."""

    files: int
    size: int
    sha256: str
    members: tuple[MemberInfo, ...]


def _kind(info: tarfile.TarInfo) -> str:
    if info.isreg():
        return "file"
    if info.isdir():
        return "dir"
    if info.issym():
        return "symlink"
    if info.islnk():
        return "hardlink"
    if info.ischr():
        return "character device"
    if info.isblk():
        return "block device"
    if info.isfifo():
        return "fifo"
    return f"member of tar type {info.type!r}"


def _scan(
    data: bytes, checker: MemberChecker
) -> Iterator[tuple[tarfile.TarFile, tarfile.TarInfo, MemberInfo]]:
    """Yield each accepted member (with the open tar stream, positioned at its data), then
    check the archive as a whole. Raises on the first unsafe member."""

    def cap() -> int:
        return checker.limit + _OVERHEAD_FIXED + _OVERHEAD_PER_MEMBER * (checker.members + 1)

    reader = BoundedGunzip(data, cap)
    try:
        with tarfile.open(fileobj=reader, mode="r|") as tar:
            tar.errorlevel = 2
            for info in tar:
                member = checker.add(info.name, _kind(info), info.size, info.linkname, info.mode)
                if member is not None:
                    yield tar, info, member
    except tarfile.TarError as exc:
        raise InvalidContext(f"context archive is not a readable tar file: {exc}") from None
    checker.finish()
    reader.drain()


def inspect_archive(data: bytes, *, limit: int = DEFAULT_CONTEXT_LIMIT) -> ContextInfo:
    """Check a context archive without unpacking it.

    Raises :class:`~assay.errors.InvalidContext` naming the first bad member and why (absolute
    path, ``..``, device or fifo, a link resolving outside the root, a path over
    :data:`~assay.context.MAX_PATH_BYTES`, a name over :data:`~assay.context.NAME_MAX`, more
    than :data:`~assay.context.MAX_MEMBERS` paths, not a gzip'd tar), and
    :class:`~assay.errors.TooLarge` for an archive over :func:`~assay.context.archive_limit`
    and once the file data passes ``limit``, without inflating more.
    """
    if len(data) > archive_limit(limit):
        raise TooLarge(archive_too_large_message("the context archive", len(data), limit))
    checker = MemberChecker(limit)
    members = [member for _, _, member in _scan(data, checker)]
    return ContextInfo(
        files=checker.files,
        size=checker.total,
        sha256=hashlib.sha256(data).hexdigest(),
        members=tuple(members),
    )


def extract_archive(data: bytes, dest: Path, *, limit: int = DEFAULT_CONTEXT_LIMIT) -> None:
    """Check ``data`` as :func:`inspect_archive` does, then unpack it into ``dest`` (created if
    missing). Files keep their owner-executable bit; ownership is not restored and
    modification times are those of the extraction.

    Nothing is written when the archive is refused, nor when a member's path under ``dest``
    would be longer than PATH_MAX; a link already in ``dest`` is never written through.
    """
    checked = inspect_archive(data, limit=limit)
    root = os.path.realpath(dest)
    _check_fits(checked, root, dest)
    dest.mkdir(parents=True, exist_ok=True)
    for tar, info, member in _scan(data, MemberChecker(limit)):
        prepared = tarsafe.with_changes(
            info, name=member.name, mode=member.mode, linkname=member.linkname, mtime=None
        )
        try:
            # The data filter is a second line of defence: it also sees the destination as it
            # is on disk (a symlink already there), which the archive alone cannot show.
            tarsafe.extract(tar, prepared, root)
        except tarsafe.REFUSED as exc:
            raise InvalidContext(
                f"context archive member {shown(info.name)} refused while extracting into "
                f"{dest}: {exc}"
            ) from None
        except tarfile.TarError as exc:
            raise InvalidContext(
                f"context archive member {shown(info.name)} could not be extracted into "
                f"{dest}: {exc}"
            ) from None


def _check_fits(info: ContextInfo, root: str, dest: Path) -> None:
    """Refuse, before anything is written, a member whose path under ``root`` would be longer
    than the kernel takes (the master's limit leaves room for a destination of up to 1 KiB)."""
    room = PATH_MAX - 1 - encoded_len(root) - 1
    for member in info.members:
        if encoded_len(member.name) > room:
            raise InvalidContext(
                f"context archive member {shown(member.name)} would have a path longer than "
                f"PATH_MAX ({PATH_MAX:,} bytes) once unpacked into {dest}; unpack it into a "
                "directory with a shorter path"
            )
