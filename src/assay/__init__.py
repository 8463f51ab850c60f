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
    "core",
    "get_cluster_info",
]

_FROM_CORE = ("ClusterInfo", "InvalidHP", "TrialInfo", "get_cluster_info")


def __getattr__(name: str) -> Any:
    if name == "core" or name in _FROM_CORE:
        import importlib

        core = importlib.import_module("assay.core")
        return core if name == "core" else getattr(core, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
