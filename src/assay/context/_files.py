"""A context sent as a list of files (Determined's clients send one so, base64 in JSON) made
into the archive every context is, so that it is checked, stored and unpacked as any other:
nothing in a name is trusted here, the archive's checks judge it (:func:`inspect_archive`)."""

from __future__ import annotations

import gzip
import io
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass

from assay.context._sizes import DEFAULT_CONTEXT_LIMIT, format_limit
from assay.errors import TooLarge


@dataclass(frozen=True)
class ContextEntry:
    """One file or directory of a context, as a client listed it."""

    path: str
    directory: bool
    data: bytes = b""
    mode: int = 0o644
    mtime: int = 0


def archive_entries(
    entries: Iterable[ContextEntry], *, limit: int = DEFAULT_CONTEXT_LIMIT
) -> bytes:
    """``entries`` as a tar.gz, in the order given; file data over ``limit`` in all is
    :class:`~assay.errors.TooLarge` before the archive is finished."""
    raw = io.BytesIO()
    total = 0
    # Fast compression: the master unpacks it at once, and the level changes nothing it checks.
    with (
        gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1, mtime=0) as zipped,
        tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for entry in entries:
            total += len(entry.data)
            if total > limit:
                raise TooLarge(
                    f"the context's files hold more than {format_limit(limit)}: leave big files "
                    "out of it (.detignore) and load data from outside it"
                )
            info = tarfile.TarInfo(entry.path)
            info.type = tarfile.DIRTYPE if entry.directory else tarfile.REGTYPE
            info.mode = entry.mode & 0o7777
            info.mtime = max(entry.mtime, 0)
            info.size = 0 if entry.directory else len(entry.data)
            tar.addfile(info, None if entry.directory else io.BytesIO(entry.data))
    return raw.getvalue()
