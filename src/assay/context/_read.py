"""Reading one file of a context archive without unpacking it (the master reads an
entrypoint's script to see what it imports)."""

from __future__ import annotations

from assay.context._archive import _scan
from assay.context._members import MemberChecker
from assay.context._sizes import DEFAULT_CONTEXT_LIMIT


def read_member(
    data: bytes, name: str, *, max_bytes: int, limit: int = DEFAULT_CONTEXT_LIMIT
) -> bytes | None:
    """The contents of the regular file ``name`` (normalised as
    :attr:`~assay.context.MemberInfo.name` is) in the archive; None when it holds no such
    file (a link or a directory included) or the file is larger than ``max_bytes``. The
    archive is judged member by member as :func:`~assay.context.inspect_archive` judges it,
    and read no further than that file."""
    checker = MemberChecker(limit)
    for tar, info, member in _scan(data, checker):
        if member.name != name:
            continue
        if member.kind != "file" or info.size > max_bytes:
            return None
        handle = tar.extractfile(info)
        return handle.read() if handle is not None else None
    return None
