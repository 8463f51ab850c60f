"""The one line a trial's log gets when its code imports assay's ``determined``."""

from __future__ import annotations

import importlib.metadata
import os
import sys

_SAID = "ASSAY_DETERMINED_SHIM_SAID"
"""Set once said, so the processes a launcher starts (which inherit it) do not repeat it."""


def announce() -> None:
    if os.environ.get(_SAID):
        return
    os.environ[_SAID] = "1"
    try:
        installed = importlib.metadata.version("determined")
    except importlib.metadata.PackageNotFoundError:
        installed = ""
    also = f" (it takes precedence over the installed determined {installed})" if installed else ""
    sys.stderr.write(
        f"assay: 'import determined' uses assay's Determined-compatible Core API{also}\n"
    )
    sys.stderr.flush()
