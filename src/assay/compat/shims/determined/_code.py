"""The trial's code in its checkpoints (``code/``), as every Trial API of Determined's keeps
it: so that loading the checkpoint can import the trial class again, and so that it says what
trained it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

CODE_DIR = "code"
CODE_FILE_LIMIT = 1024 * 1024
"""A file of the trial's directory larger than this is not copied to ``code/``: data, not code."""
CODE_SUFFIXES = (".py", ".yaml", ".yml", ".json", ".sh", ".txt", ".cfg", ".toml")


def copy_code(source: Path, dest: Path) -> None:
    """The code files of ``source`` (the trial's directory: the experiment's context) into
    ``dest``; data, larger files and hidden directories are left out."""
    for root, dirs, files in os.walk(source):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__"]
        for name in files:
            if not name.endswith(CODE_SUFFIXES):
                continue
            file = Path(root, name)
            try:
                if file.stat().st_size > CODE_FILE_LIMIT:
                    continue
            except OSError:
                continue
            target = dest / file.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(file, target)
