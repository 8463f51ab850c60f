"""Which paths of a context directory are left out: ignore files plus byte-compiled Python."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pathspec

IGNORE_FILES = (".assayignore", ".detignore", ".nniignore")
"""Ignore files read from the top of a context directory, all in gitignore syntax.

Their lines are joined in this order, so a later file can re-include (``!path``) what an
earlier one left out, as later lines of one ``.gitignore`` do."""

# Byte-compiled files are machine- and version-specific and would only bloat the upload,
# so they go whatever the ignore files say.
_ALWAYS = ("__pycache__/", "*.pyc")


class IgnoreRules:
    """Decides whether a path, relative to the context root, is left out.

    Paths use ``/`` separators and no leading ``./``. A directory is asked about with
    ``is_dir=True``; when it is ignored the walker does not enter it, so, as in git, nothing
    beneath an ignored directory can be re-included.
    """

    def __init__(self, lines: Sequence[str] = ()) -> None:
        self._user = pathspec.GitIgnoreSpec.from_lines(list(lines))
        self._always = pathspec.GitIgnoreSpec.from_lines(list(_ALWAYS))

    def ignored(self, rel: str, *, is_dir: bool) -> bool:
        probe = f"{rel}/" if is_dir else rel
        return bool(self._always.match_file(probe) or self._user.match_file(probe))


def read_ignore_lines(root: Path) -> list[str]:
    """The lines of every ignore file present at the top of ``root``, in :data:`IGNORE_FILES`
    order."""
    lines: list[str] = []
    for name in IGNORE_FILES:
        path = root / name
        if path.is_file():
            lines.extend(path.read_text(encoding="utf-8", errors="replace").splitlines())
    return lines
