"""Byte counts as people read them, and the message that refuses an oversized context."""

from __future__ import annotations

from collections.abc import Iterable

DEFAULT_CONTEXT_LIMIT = 95 * 2**20
"""The most a context directory may hold, uncompressed (Determined's 95 MiB)."""

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
