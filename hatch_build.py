"""Build hook: a wheel or sdist of assay carries the built web UI and the commit it was built from.

The UI is built by `make webui` (npm, from web/) into src/assay/webui/dist, which git ignores; a
release built without it would serve a page saying the UI is missing, so building one without it
fails here, naming the command that builds it. Editable installs (`pip install -e .`) are for
working on the source and need no UI.

The commit goes into the package as assay/BUILD_COMMIT: from git where the build runs in a
checkout, else from the sdist's own copy (a wheel built from an sdist keeps its commit).
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

UI_INDEX = Path("src/assay/webui/dist/index.html")
COMMIT_FILE = "src/assay/BUILD_COMMIT"


class BuildError(Exception):
    """A release cannot be built from this tree; the message says what to run."""


def _git_commit(root: Path) -> str | None:
    if not (root / ".git").exists():
        return None
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None
    return done.stdout.strip() or None


class CustomBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name == "wheel" and version == "editable":
            return
        root = Path(self.root)
        if not (root / UI_INDEX).is_file():
            raise BuildError(
                f"the web UI is not built ({UI_INDEX} is missing): run `make dist`, or "
                "`make webui` (Node.js and npm) and build again"
            )
        commit = _git_commit(root)
        if commit is None:
            if (root / COMMIT_FILE).is_file():
                return  # an sdist's tree: its own copy goes into what is built from it
            raise BuildError("no commit to record: build from a git checkout or from an sdist")
        self._tmp = tempfile.TemporaryDirectory()
        stamp = Path(self._tmp.name) / "BUILD_COMMIT"
        stamp.write_text(commit + "\n")
        inside = "assay/BUILD_COMMIT" if self.target_name == "wheel" else COMMIT_FILE
        build_data["force_include"][str(stamp)] = inside

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        tmp = getattr(self, "_tmp", None)
        if tmp is not None:
            tmp.cleanup()
