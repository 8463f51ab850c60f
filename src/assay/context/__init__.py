"""Context directories: the user's code, packed by the CLI, checked by the master, unpacked by
agents.

The archive is a deterministic tar.gz (same tree, same sha256). Reading one never trusts it:
absolute paths, ``..``, special files, links leading out of the root, paths too long or too deep
for an agent to create, more than :data:`MAX_MEMBERS` paths and archives inflating past the size
limit are refused before anything is written.
"""

from __future__ import annotations

from assay.context._archive import ContextInfo, extract_archive, inspect_archive
from assay.context._files import ContextEntry, archive_entries
from assay.context._ignore import IGNORE_FILES, IgnoreRules
from assay.context._members import MemberChecker, MemberInfo, MemberKind
from assay.context._pack import PackedContext, pack_context
from assay.context._read import read_member
from assay.context._sizes import (
    ARCHIVE_ALLOWANCE,
    DEFAULT_CONTEXT_LIMIT,
    MAX_DEPTH,
    MAX_MEMBERS,
    MAX_PATH_BYTES,
    NAME_MAX,
    PATH_MAX,
    archive_limit,
    archive_too_large_message,
    format_limit,
    format_size,
    too_large_message,
)

__all__ = [
    "ARCHIVE_ALLOWANCE",
    "DEFAULT_CONTEXT_LIMIT",
    "IGNORE_FILES",
    "MAX_DEPTH",
    "MAX_MEMBERS",
    "MAX_PATH_BYTES",
    "NAME_MAX",
    "PATH_MAX",
    "ContextEntry",
    "ContextInfo",
    "IgnoreRules",
    "MemberChecker",
    "MemberInfo",
    "MemberKind",
    "PackedContext",
    "archive_entries",
    "archive_limit",
    "archive_too_large_message",
    "extract_archive",
    "format_limit",
    "format_size",
    "inspect_archive",
    "pack_context",
    "read_member",
    "too_large_message",
]
