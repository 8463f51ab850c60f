"""Files only their owner may read: the stored sign-ins, the agent token, the local admin's
password.

A private file is written whole to a new file made 0600 and renamed over the old one, so no
reader sees it half-written or, for a moment, with looser permissions.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["write_private"]


def write_private(path: Path, text: str) -> None:
    """Write ``path`` readable by its owner only (0600), in a directory made 0700 if new."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as out:  # mkstemp makes it 0600
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
