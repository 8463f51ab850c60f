"""Shims that let Determined's and NNI's trial code run unchanged under assay.

:data:`SHIMS_DIR` holds top-level packages named as the upstream ones (``determined``, ``nni``),
each implemented on :mod:`assay.core`. The agent puts the directory first on every trial
process's ``PYTHONPATH``, so ``import determined`` finds assay's even where the trial's
environment has the upstream package installed.
"""

from __future__ import annotations

from pathlib import Path

SHIMS_DIR = Path(__file__).resolve().parent / "shims"
"""The directory of the shim packages (not a package itself: it goes on ``PYTHONPATH``)."""

__all__ = ["SHIMS_DIR", "trial_pythonpath"]


def trial_pythonpath(existing: str | None) -> str:
    """A trial's ``PYTHONPATH``: the shims first, then what the trial's environment had."""
    parts = [str(SHIMS_DIR)]
    if existing:
        parts += [p for p in existing.split(":") if p and p != str(SHIMS_DIR)]
    return ":".join(parts)
