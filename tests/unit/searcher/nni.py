"""What the NNI-type searcher tests share: a space of every NNI type, a check that a point is
one it can give, and a driver that runs a search to its end."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from assay.config import parse_hyperparameters
from assay.searcher import Create, Searcher, SearchMethod

NNI_SPACE = parse_hyperparameters(
    {
        "model": {
            "type": "choice",
            "options": [
                {"_name": "conv", "k": {"type": "int", "minval": 2, "maxval": 5}},
                {"_name": "mlp", "width": {"type": "double", "minval": 0, "maxval": 1, "q": 0.25}},
                {"_name": "none"},
                "plain",
            ],
        },
        "drop": {"type": "double", "minval": 0.02, "maxval": 0.97, "q": 0.1},
        "lr": {"type": "log", "minval": -4, "maxval": -1, "q": 0.0005},
        "shift": {"type": "normal", "mu": 3, "sigma": 2, "q": 0.5},
        "scale": {"type": "lognormal", "mu": 0, "sigma": 0.5},
        "fixed": 7,
    }
)


def on_grid(value: float, q: float) -> bool:
    return math.isclose(value / q, round(value / q), abs_tol=1e-9)


def check_point(point: dict[str, Any]) -> None:
    """Every value of ``point`` is one NNI_SPACE can give."""
    assert set(point) == {"model", "drop", "lr", "shift", "scale", "fixed"}
    model = point["model"]
    if isinstance(model, dict):
        assert model["_name"] in {"conv", "mlp", "none"}
        if model["_name"] == "conv":
            assert set(model) == {"_name", "k"} and model["k"] in {2, 3, 4, 5}
        elif model["_name"] == "mlp":
            assert set(model) == {"_name", "width"} and model["width"] in {0, 0.25, 0.5, 0.75, 1}
        else:
            assert model == {"_name": "none"}
    else:
        assert model == "plain"
    drop = point["drop"]
    assert 0.02 <= drop <= 0.97
    assert drop in (0.02, 0.97) or on_grid(drop, 0.1)
    lr = point["lr"]
    assert 1e-4 <= lr <= 1e-1 + 1e-12
    assert lr == 1e-4 or on_grid(lr, 0.0005)
    assert on_grid(point["shift"], 0.5)
    assert point["scale"] > 0
    assert point["fixed"] == 7


def run_search(
    method: SearchMethod, score: Callable[[dict[str, Any]], float]
) -> list[dict[str, Any]]:
    """Run every trial the method creates to its length, scored by ``score`` of its
    hyperparameters, until the search shuts down; the hyperparameters in creation order."""
    searcher = Searcher(method)
    created: list[dict[str, Any]] = []
    queue = list(searcher.initial_operations())
    while queue:
        op = queue.pop(0)
        if isinstance(op, Create):
            created.append(op.hparams)
            length = searcher.pending_length(op.request_id)
            assert length is not None
            queue += searcher.validation_completed(op.request_id, score(op.hparams), length)
            queue += searcher.trial_closed(op.request_id)
    return created
