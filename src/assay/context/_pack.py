"""Packing a context directory into a deterministic tar.gz (the CLI's side)."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import posixpath
import stat
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from assay.context._ignore import IgnoreRules, read_ignore_lines
from assay.context._members import MemberChecker, normalize_mode
from assay.context._paths import parts_problem, shown, text_problem
from assay.context._sizes import (
    DEFAULT_CONTEXT_LIMIT,
    MAX_MEMBERS,
    archive_limit,
    archive_too_large_message,
    too_large_message,
)
from assay.errors import InvalidContext, TooLarge

# Every header carries the same time and owner, so the archive (and its sha256, by which the
# master deduplicates contexts) depends only on paths, contents and executable bits.
_FIXED_MTIME = 0
_COMPRESSLEVEL = 6


@dataclass(frozen=True)
class PackedContext:
    """A packed context: ``data`` is the tar.gz, ``files`` counts regular files and symlinks,
    ``size`` is the uncompressed total of file data, ``sha256`` the digest of ``data``."""

    data: bytes = field(repr=False)
    files: int
    size: int
    sha256: str


@dataclass(frozen=True)
class _Entry:
    rel: str
    kind: Literal["file", "dir", "symlink"]
    size: int = 0
    mode: int = 0o644
    linkname: str = ""


def pack_context(
    root: Path, *, limit: int = DEFAULT_CONTEXT_LIMIT, max_members: int = MAX_MEMBERS
) -> PackedContext:
    """Pack the directory ``root`` for upload.

    Paths matched by ``.assayignore``, ``.detignore`` or ``.nniignore`` at the top of ``root``
    (gitignore syntax) are left out, and so are ``__pycache__/`` and ``*.pyc``. Symlinks are kept
    as links when they resolve inside ``root`` and refused when they lead outside it. The same
    tree always gives the same bytes.

    Raises :class:`~assay.errors.InvalidContext` for a missing root, a root that is not a
    directory, a link, special file or unreadable file inside it, a path the master would refuse
    (see :data:`~assay.context.MAX_PATH_BYTES`), or more than ``max_members`` paths (the walk
    stops there), and
    :class:`~assay.errors.TooLarge` (before building anything) when the files kept add up to
    more than ``limit`` bytes, or (after) when the archive is over
    :func:`~assay.context.archive_limit`, the most the master accepts.
    """
    label = str(root)
    if not root.exists():
        raise InvalidContext(
            f"context directory {label} does not exist; pass the directory holding the "
            "training code"
        )
    if not root.is_dir():
        raise InvalidContext(
            f"context directory {label} is a file, not a directory; pass the directory holding "
            "the training code"
        )
    real_root = os.path.realpath(root)
    try:
        rules = IgnoreRules(read_ignore_lines(Path(real_root)))
    except OSError as exc:
        raise InvalidContext(f"could not read the ignore files of {label}: {exc}") from None
    entries: list[_Entry] = []
    _walk(real_root, "", rules, _Admit(label, max_members), entries)
    total = sum(entry.size for entry in entries)
    if total > limit:
        sizes = [(entry.rel, entry.size) for entry in entries if entry.kind == "file"]
        raise TooLarge(too_large_message(label, total, limit, sizes))
    _self_check(entries, limit, max_members, label)
    data, size = _build(real_root, entries, limit, label)
    if len(data) > archive_limit(limit):
        # Only tens of thousands of incompressible files get here; the master would refuse it.
        raise TooLarge(
            archive_too_large_message(f"the packed context directory {label}", len(data), limit)
        )
    return PackedContext(
        data=data,
        files=sum(1 for entry in entries if entry.kind != "dir"),
        size=size,
        sha256=hashlib.sha256(data).hexdigest(),
    )


@dataclass(frozen=True)
class _Admit:
    """Refuses, as the walk meets it, a path the master would refuse or one path too many: the
    walk of a tree of a million files stops at the first one too many, and no directory deeper
    than the limit is recursed into."""

    label: str
    max_members: int

    def __call__(self, rel: str, out: list[_Entry]) -> None:
        if len(out) >= self.max_members:
            raise InvalidContext(
                f"context directory {self.label} has more than {self.max_members:,} files, "
                f"directories and links (the limit on a context); counting stopped at "
                f"{shown(rel)}; add what the trial does not need (data, environments, build "
                "output) to .assayignore"
            )
        problem = text_problem(rel) or parts_problem(rel.split("/"))
        if problem is not None:
            raise InvalidContext(
                f"{shown(rel)} in context directory {self.label} {problem}; shorten it or add "
                "it to .assayignore"
            )


def _walk(
    real_root: str, rel_dir: str, rules: IgnoreRules, admit: _Admit, out: list[_Entry]
) -> None:
    label = admit.label
    directory = os.path.join(real_root, rel_dir) if rel_dir else real_root
    try:
        with os.scandir(directory) as it:
            children = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        raise InvalidContext(f"could not list {rel_dir or '.'} in {label}: {exc}") from None
    for child in children:
        rel = f"{rel_dir}/{child.name}" if rel_dir else child.name
        _check_encodable(rel, label)
        try:
            st = child.stat(follow_symlinks=False)
        except OSError as exc:
            raise InvalidContext(
                f"could not read {rel} in {label}: {exc.strerror or exc}"
            ) from None
        if stat.S_ISLNK(st.st_mode):
            if not rules.ignored(rel, is_dir=False):
                admit(rel, out)
                link = _link_target(real_root, rel, label)
                out.append(_Entry(rel, "symlink", mode=0o777, linkname=link))
        elif stat.S_ISDIR(st.st_mode):
            if not rules.ignored(rel, is_dir=True):
                admit(rel, out)
                out.append(_Entry(rel, "dir", mode=0o755))
                _walk(real_root, rel, rules, admit, out)
        elif stat.S_ISREG(st.st_mode):
            if not rules.ignored(rel, is_dir=False):
                admit(rel, out)
                mode = normalize_mode(st.st_mode, "file")
                out.append(_Entry(rel, "file", size=st.st_size, mode=mode))
        elif not rules.ignored(rel, is_dir=False):
            raise InvalidContext(
                f"{rel} in context directory {label} is a {_special_kind(st.st_mode)}, which "
                "cannot be sent; add it to .assayignore"
            )


def _link_target(real_root: str, rel: str, label: str) -> str:
    """The target to store for the symlink at ``rel``: where it really leads (chains followed),
    relative to its own directory, so the stored link crosses no other link."""
    path = os.path.join(real_root, rel)
    raw = os.readlink(path)
    try:
        resolved = os.path.realpath(path, strict=True)
    except FileNotFoundError:
        resolved = os.path.realpath(path)  # dangling: kept if it would dangle inside
    except OSError as exc:
        raise InvalidContext(
            f"symlink {rel} in context directory {label} points to {raw}, which cannot be "
            f"resolved ({exc.strerror or exc}); remove it or add it to .assayignore"
        ) from None
    if os.path.commonpath([resolved, real_root]) != real_root:
        raise InvalidContext(
            f"symlink {rel} in context directory {label} points to {raw}, outside the context "
            "directory; copy what it points to into the directory, or add the link to "
            ".assayignore"
        )
    parent = os.path.join(real_root, posixpath.dirname(rel))
    return Path(os.path.relpath(resolved, parent)).as_posix()


def _special_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    return "special file"


def _check_encodable(rel: str, label: str) -> None:
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidContext(
            f"{rel.encode('utf-8', 'surrogateescape')!r} in context directory {label} has a name "
            "that is not valid UTF-8; rename it or add it to .assayignore"
        ) from None


def _self_check(entries: list[_Entry], limit: int, max_members: int, label: str) -> None:
    """Judge the entries by the rules the master and agents apply, so a context that packs
    is never refused for its shape after upload."""
    checker = MemberChecker(limit, max_members=max_members)
    try:
        for entry in entries:
            checker.add(entry.rel, entry.kind, entry.size, entry.linkname, entry.mode)
        checker.finish()
    except InvalidContext as exc:
        raise InvalidContext(f"context directory {label} cannot be sent: {exc.message}") from None


def _header(entry: _Entry) -> tarfile.TarInfo:
    info = tarfile.TarInfo(entry.rel)
    info.mtime = _FIXED_MTIME
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mode = entry.mode
    if entry.kind == "dir":
        info.type = tarfile.DIRTYPE
    elif entry.kind == "symlink":
        info.type = tarfile.SYMTYPE
        info.linkname = entry.linkname
    else:
        info.type = tarfile.REGTYPE
        info.size = entry.size
    return info


def _build(real_root: str, entries: list[_Entry], limit: int, label: str) -> tuple[bytes, int]:
    """The tar.gz of ``entries`` and the file bytes it holds."""
    buffer = io.BytesIO()
    written = 0
    with (
        gzip.GzipFile(
            filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=_COMPRESSLEVEL
        ) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for entry in entries:
            info = _header(entry)
            if entry.kind != "file":
                tar.addfile(info)
                continue
            try:
                with open(os.path.join(real_root, entry.rel), "rb") as handle:
                    # The file may have changed since the walk: archive what is there now.
                    info.size = os.fstat(handle.fileno()).st_size
                    written += info.size
                    if written > limit:
                        raise TooLarge(
                            f"context directory {label} grew past the limit while being packed "
                            f"({entry.rel} is now {info.size} bytes); try again"
                        )
                    tar.addfile(info, handle)
            except OSError as exc:
                raise InvalidContext(
                    f"could not read {entry.rel} in context directory {label}: "
                    f"{exc.strerror or exc}"
                ) from None
    return buffer.getvalue(), written
