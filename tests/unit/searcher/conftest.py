from __future__ import annotations

from typing import Any

import pytest

from assay.config import parse_hyperparameters


@pytest.fixture
def space() -> dict[str, Any]:
    return parse_hyperparameters(
        {
            "lr": {"type": "log", "minval": -4, "maxval": -1, "base": 10},
            "layers": {"type": "int", "minval": 1, "maxval": 8},
            "dropout": {"type": "double", "minval": 0.0, "maxval": 0.5},
            "optimizer": {"type": "categorical", "vals": ["sgd", "adam"]},
            "arch": {"width": {"type": "int", "minval": 16, "maxval": 256}, "act": "relu"},
            "epochs_hint": 3,
        }
    )
