"""Byte counts as people read them, the limits on a context, and the messages that refuse one."""

from __future__ import annotations

from collections.abc import Iterable

DEFAULT_CONTEXT_LIMIT = 95 * 2**20
"""The most a context directory may hold, uncompressed (Determined's 95 MiB)."""

ARCHIVE_ALLOWANCE = 5 * 2**20
"""Room a packed context gets beyond its file data, for tar headers, padding and gzip framing.

Gzip grows incompressible data by a fraction of a percent and a tar header packs to well under
a hundred bytes, so only tens of thousands of incompressible files could need more."""

MAX_MEMBERS = 100_000
"""The most files, directories and links a context may hold, counting the directories its paths
imply: far more than any code tree, and few enough that checking and unpacking one stays quick."""

PATH_MAX = 4096
"""Linux's limit on a path handed to the kernel, its closing NUL included."""

NAME_MAX = 255
"""Linux's limit on one component of a path (a file or directory name), in bytes."""

MAX_PATH_BYTES = PATH_MAX - 1024
"""The longest path inside a context, in bytes (UTF-8): PATH_MAX less room for the directory an
agent unpacks it into, so that what the master accepts every agent can unpack."""

MAX_DEPTH = 128
"""The most components a path inside a context may have. No code tree comes near it, and it keeps
the cost of checking a member, and of resolving a link, small whatever the archive says."""

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")
_SHOWN_BIGGEST = 5


def format_size(n: int) -> str:
    """``n`` bytes with one decimal in the largest binary unit that keeps it >= 1: ``120.4 MiB``."""
    if n < 1024:
        return f"{n} B"
    value = float(n)
    unit = 0
    while value >= 1024 and unit < len(_UNITS) - 1:
        value /= 1024
        unit += 1
    return f"{value:.1f} {_UNITS[unit]}"


def format_limit(n: int) -> str:
    """Like :func:`format_size`, but a round limit reads ``95 MiB``, not ``95.0 MiB``."""
    text = format_size(n)
    number, _, unit = text.partition(" ")
    return f"{number.removesuffix('.0')} {unit}"


def archive_limit(limit: int = DEFAULT_CONTEXT_LIMIT) -> int:
    """The most bytes the packed tar.gz of a context may have when its files may hold ``limit``
    bytes: what the master accepts as an upload."""
    return limit + ARCHIVE_ALLOWANCE


def archive_too_large_message(what: str, size: int, limit: int = DEFAULT_CONTEXT_LIMIT) -> str:
    """Why a packed context of ``size`` bytes is refused; ``what`` names it (``the context
    archive``, ``context directory ./code packed``)."""
    return (
        f"{what} is {format_size(size)}, over the {format_limit(archive_limit(limit))} limit on a "
        f"packed context ({format_limit(limit)} of files plus {format_limit(ARCHIVE_ALLOWANCE)} "
        "for the archive's headers); leave big files, or very many small ones, out of the "
        "context (.assayignore) and load data from outside it"
    )


def biggest(sizes: Iterable[tuple[str, int]], count: int = _SHOWN_BIGGEST) -> list[tuple[str, int]]:
    """The ``count`` largest ``(path, size)`` pairs, largest first, ties by path so the
    message is the same for the same tree."""
    return sorted(sizes, key=lambda item: (-item[1], item[0]))[:count]


def too_large_message(label: str, total: int, limit: int, sizes: Iterable[tuple[str, int]]) -> str:
    """Why a context directory is refused, naming the files that would help most to ignore."""
    top = ", ".join(f"{path} ({format_size(size)})" for path, size in biggest(sizes))
    return (
        f"context directory {label} is {format_size(total)}, over the {format_limit(limit)} "
        f"limit; biggest files: {top or 'none'}; add them to .assayignore (gitignore syntax) "
        "or load data from outside the context"
    )
