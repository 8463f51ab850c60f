"""Fixtures shared by the config tests."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def minimal() -> dict[str, Any]:
    """The smallest experiment config assay accepts."""
    return {"entrypoint": "python3 train.py", "searcher": {"name": "single", "metric": "loss"}}
