"""Paths inside a context: how a member's name is normalised, the limits a path must keep so
that every agent can create it, and how a path is quoted in a message.

A name is judged in two steps: :func:`text_problem` on the raw string (cheap, and first, so that
no later message quotes a megabyte of name), then :func:`split_name` and :func:`parts_problem`
on its components.
"""

from __future__ import annotations

from assay.context._sizes import MAX_DEPTH, MAX_PATH_BYTES, NAME_MAX, PATH_MAX
from assay.errors import InvalidContext

# A quoted path longer than this is cut in the middle; its start and end still say which it is.
_SHOWN_CHARS = 100
_SHOWN_HEAD = 60
_SHOWN_TAIL = 30


def encoded_len(text: str) -> int:
    """Bytes of ``text`` on disk. Names tar could not decode carry their raw bytes as
    surrogates, and count as those bytes."""
    return len(text.encode("utf-8", "surrogateescape"))


def shown(path: str, *, sized: bool = True) -> str:
    """``path`` quoted for a one-line message: ``'a/b.py'``, or for a very long one its start
    and end with (when ``sized``) its length, ``'aaaa...zzzz' (5,000 bytes)``."""
    if len(path) <= _SHOWN_CHARS:
        return repr(path)
    cut = repr(f"{path[:_SHOWN_HEAD]}...{path[-_SHOWN_TAIL:]}")
    return f"{cut} ({encoded_len(path):,} bytes)" if sized else cut


def text_problem(raw: str) -> str | None:
    """Why the string ``raw`` cannot be a path inside a context, as a phrase to follow its quoted
    name, or ``None``. Only what can be seen without splitting it."""
    if "\0" in raw:
        return "has a NUL character in it, which no file name can hold"
    size = encoded_len(raw)
    if size > MAX_PATH_BYTES:
        return (
            f"is {size:,} bytes long, over the {MAX_PATH_BYTES:,}-byte limit on a path inside a "
            f"context (PATH_MAX, {PATH_MAX:,}, less room for the directory it is unpacked into)"
        )
    return None


def parts_problem(parts: list[str]) -> str | None:
    """Why the components ``parts`` cannot make a path inside a context (as
    :func:`text_problem` says it), or ``None``."""
    if len(parts) > MAX_DEPTH:
        return (
            f"is {len(parts):,} components deep, over the limit of {MAX_DEPTH} on a path inside "
            "a context"
        )
    for part in parts:
        size = encoded_len(part)
        if size > NAME_MAX:
            return (
                f"has a component of {size:,} bytes, {shown(part, sized=False)}, over the "
                f"{NAME_MAX}-byte limit on a file name (NAME_MAX)"
            )
    return None


def split_name(raw: str, *, what: str = "member") -> list[str]:
    """The components of ``raw`` as a plain relative path: ``.`` and empty components dropped,
    ``[]`` for the root itself. Absolute paths and ``..`` components are refused."""
    if raw.startswith("/"):
        raise InvalidContext(
            f"context archive {what} {shown(raw)} is an absolute path; every member must be "
            "relative to the context root"
        )
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise InvalidContext(
            f"context archive {what} {shown(raw)} has a '..' component; members must stay inside "
            "the context root"
        )
    return parts
