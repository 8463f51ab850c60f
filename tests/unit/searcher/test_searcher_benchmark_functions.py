"""The B9 benchmark's test functions match their published optima."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "searchers"
sys.path.insert(0, str(BENCH))

functions = pytest.importorskip("functions")


@pytest.mark.parametrize("x", [(-math.pi, 12.275), (math.pi, 2.275), (9.42478, 2.475)])
def test_branin_minima_are_at_the_published_points(x: tuple[float, float]) -> None:
    assert functions.branin(*x) == pytest.approx(functions.BRANIN_MIN, abs=1e-5)


def test_hartmann6_minimum_is_at_the_published_point() -> None:
    argmin = [0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573]
    assert functions.hartmann6(argmin) == pytest.approx(functions.HARTMANN6_MIN, abs=1e-4)


def test_lower_fidelity_hartmann6_is_shifted_up() -> None:
    argmin = [0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573]
    assert functions.hartmann6(argmin, 0.2) > functions.hartmann6(argmin, 1.0)
