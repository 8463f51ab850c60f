"""Benchmark objectives written from their formulas, and the recorded digits learning curves.

Each task exposes the same shape: a search space (assay's hyperparameter JSON), ``max_length``,
``value(hparams, length)`` (the metric a trial reports after training ``length`` units, smaller
is better) and ``optimum`` (the best full-length value, for regret).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CURVES = HERE / "data" / "digits_curves.json"

# Hartmann6 constants (Hartmann 1972; as tabulated by Surjanovic & Bingham's library).
_ALPHA = (1.0, 1.2, 3.0, 3.2)
_A = (
    (10, 3, 17, 3.5, 1.7, 8),
    (0.05, 10, 17, 0.1, 8, 14),
    (3, 3.5, 1.7, 10, 17, 8),
    (17, 8, 0.05, 10, 0.1, 14),
)
_P = tuple(
    tuple(v * 1e-4 for v in row)
    for row in (
        (1312, 1696, 5569, 124, 8283, 5886),
        (2329, 4135, 8307, 3736, 1004, 9991),
        (2348, 1451, 3522, 2883, 3047, 6650),
        (4047, 8828, 8732, 5743, 1091, 381),
    )
)
HARTMANN6_MIN = -3.322368011415515
BRANIN_MIN = 0.39788735772973816


def branin(x1: float, x2: float) -> float:
    b = 5.1 / (4 * math.pi**2)
    c = 5 / math.pi
    t = 1 / (8 * math.pi)
    return (x2 - b * x1**2 + c * x1 - 6) ** 2 + 10 * (1 - t) * math.cos(x1) + 10


def hartmann6(x: list[float], fidelity: float = 1.0) -> float:
    """Hartmann6; below full fidelity each alpha_i drops by 0.1 * (1 - fidelity), the
    multi-fidelity form used by Kandasamy et al. (2017) and BoTorch's AugmentedHartmann."""
    total = 0.0
    for i in range(4):
        inner = sum(_A[i][j] * (x[j] - _P[i][j]) ** 2 for j in range(6))
        total += (_ALPHA[i] - 0.1 * (1 - fidelity)) * math.exp(-inner)
    return -total


@dataclass(frozen=True)
class Task:
    name: str
    space: dict[str, Any]
    max_length: int
    value: Callable[[dict[str, Any], int], float]
    optimum: float
    multi_fidelity: bool


def _unit(name: str) -> dict[str, Any]:
    return {"type": "double", "minval": 0.0, "maxval": 1.0}


HARTMANN_SPACE = {f"x{i}": _unit(f"x{i}") for i in range(6)}


def _h6(hp: dict[str, Any]) -> list[float]:
    return [float(hp[f"x{i}"]) for i in range(6)]


BRANIN = Task(
    "branin",
    {
        "x1": {"type": "double", "minval": -5.0, "maxval": 10.0},
        "x2": {"type": "double", "minval": 0.0, "maxval": 15.0},
    },
    1,
    lambda hp, length: branin(float(hp["x1"]), float(hp["x2"])),
    BRANIN_MIN,
    False,
)

HARTMANN = Task(
    "hartmann6", HARTMANN_SPACE, 1, lambda hp, length: hartmann6(_h6(hp)), HARTMANN6_MIN, False
)

MF_HARTMANN_LENGTH = 81
MF_HARTMANN = Task(
    "mf_hartmann6",
    HARTMANN_SPACE,
    MF_HARTMANN_LENGTH,
    lambda hp, length: hartmann6(_h6(hp), length / MF_HARTMANN_LENGTH),
    HARTMANN6_MIN,
    True,
)


def digits_task(path: Path = CURVES) -> Task:
    """Replay the recorded learning curves (``record_digits_curves.py``): validation
    cross-entropy of an MLP on sklearn's digits after each epoch, for every point of a grid of
    hyperparameters."""
    data = json.loads(path.read_text())
    axes: dict[str, list[Any]] = data["axes"]
    curves: dict[str, list[float]] = data[data["objective"]]
    space = {name: {"type": "categorical", "vals": vals} for name, vals in axes.items()}

    def key(hp: dict[str, Any]) -> str:
        return json.dumps([hp[name] for name in axes])

    def value(hp: dict[str, Any], length: int) -> float:
        return float(curves[key(hp)][length - 1])

    optimum = min(curve[-1] for curve in curves.values())
    return Task("digits_mlp", space, int(data["epochs"]), value, optimum, True)
