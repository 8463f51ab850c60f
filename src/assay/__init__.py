"""assay: train deep-learning models on your own machines.

Training code uses ``assay.core`` (the Core API) and ``assay.get_cluster_info()``; the ``assay``
command drives a cluster. The harness is loaded on first use, so the command line, which lives
in this package too, does not pay for it at every start.
"""

from __future__ import annotations

# Not typing's: importing typing is a tenth of the time `assay` takes to hand a command over.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from assay import core
    from assay.core import ClusterInfo, InvalidHP, TrialInfo, get_cluster_info

__version__ = "0.1.0"

LOG_FORMAT = "%(levelname)s: [%(process)s] %(name)s: %(message)s"

__all__ = [
    "LOG_FORMAT",
    "ClusterInfo",
    "InvalidHP",
    "TrialInfo",
    "__version__",
    "built_from",
    "core",
    "describe_version",
    "get_cluster_info",
]


def built_from() -> str | None:
    """The full hash of the commit this package was built from, or None where it cannot be known.

    A wheel or sdist carries it in ``assay/BUILD_COMMIT`` (written by the build hook,
    ``hatch_build.py``); a source checkout asks git (a process: callers that ask often keep
    the answer)."""
    import subprocess
    from pathlib import Path

    here = Path(__file__).resolve().parent
    stamp = here / "BUILD_COMMIT"
    if stamp.is_file():
        return stamp.read_text().strip() or None
    checkout = here.parent.parent
    if not (checkout / ".git").exists():
        return None  # a tree copied without its history
    try:
        done = subprocess.run(
            ["git", "-C", str(checkout), "rev-parse", "HEAD"],
            capture_output=True, text=True, timeout=10, check=True,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


def describe_version() -> str:
    """``0.1.0 (commit 1a2b3c4d5e6f)``: what ``assay --version`` prints after the name."""
    commit = built_from()
    return __version__ + (f" (commit {commit[:12]})" if commit else "")


_FROM_CORE = ("ClusterInfo", "InvalidHP", "TrialInfo", "get_cluster_info")


def __getattr__(name: str) -> Any:
    if name == "core" or name in _FROM_CORE:
        import importlib

        core = importlib.import_module("assay.core")
        return core if name == "core" else getattr(core, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
