"""The compat corpus: real configs of Determined, NNI and OpenPAI, kept beside the repository.

Tests read it from ``ASSAY_COMPAT_DIR`` (default ``../shared/compat`` next to the repository
root). Without it those tests skip on a developer's machine, but fail under ``CI=true``: a CI run
that silently skipped every compatibility case would look green while checking nothing.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

import pytest

REPO = Path(__file__).resolve().parents[1]


def compat_dir() -> Path:
    configured = Path(os.environ.get("ASSAY_COMPAT_DIR", "../shared/compat"))
    return configured if configured.is_absolute() else (REPO / configured).resolve()


def missing(where: Path) -> NoReturn:
    """Skip the calling test (fail it under CI) because ``where`` is not in the corpus."""
    message = f"compat corpus not found at {where} (set ASSAY_COMPAT_DIR to its location)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{message}; the compatibility tests must run under CI")
    pytest.skip(message)


def corpus_dir(*parts: str) -> Path:
    """The corpus folder ``parts`` (e.g. ``"determined", "experiments"``), or skip/fail."""
    where = compat_dir().joinpath(*parts)
    if not where.is_dir():
        missing(where)
    return where
