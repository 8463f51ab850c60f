"""Weighted max-min fair shares of a pool's slots (progressive filling), real and in slots."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Claim:
    """What one job asks of the pool: ``cap`` slots at most (its demand, capped by its
    ``max_slots``), ``floor`` slots it keeps whatever happens (non-preemptible allocations)."""

    weight: float
    cap: int
    floor: int = 0


def fair_shares(capacity: int, claims: Mapping[str, Claim]) -> dict[str, float]:
    """Weighted max-min fair shares by progressive filling.

    Every job's share grows in proportion to its weight from its floor until it reaches its cap
    or the capacity is used up: share = clamp(weight * level, floor, cap) with the level chosen
    so the shares add up to min(capacity, sum of caps). So no job's share can grow without
    shrinking that of a job with a smaller or equal share per weight. A job of weight <= 0 gets
    its floor.
    """
    keys = list(claims)
    weights = [claims[k].weight for k in keys]
    caps = [claims[k].cap for k in keys]
    floors = [claims[k].floor for k in keys]
    return dict(zip(keys, water_fill(capacity, weights, floors, caps), strict=True))


def slot_targets(
    capacity: int, claims: Mapping[str, Claim], order: Sequence[str] | None = None
) -> dict[str, int]:
    """Fair shares rounded to whole slots: each within one slot of its real share, between its
    floor and cap, adding up to min(capacity, sum of caps) when the floors allow.

    Slots left by rounding down go to the largest fractions, ties to the job first in ``order``
    (default: sorted ids).
    """
    keys = list(claims)
    rank = {k: i for i, k in enumerate(order if order is not None else sorted(keys))}
    weights = [claims[k].weight for k in keys]
    caps = [claims[k].cap for k in keys]
    floors = [claims[k].floor for k in keys]
    ties = [(rank.get(k, len(rank)), k) for k in keys]
    targets = whole_slots(capacity, water_fill(capacity, weights, floors, caps), caps, ties)
    return dict(zip(keys, targets, strict=True))


def water_fill(
    capacity: int, weights: Sequence[float], floors: Sequence[int], caps: Sequence[int]
) -> list[float]:
    """:func:`fair_shares` over parallel lists (the form the fair-share policy uses)."""
    n = len(weights)
    hi = [float(max(c, 0)) for c in caps]
    lo = [float(min(f, h)) for f, h in zip(floors, hi, strict=True)]
    total = float(min(capacity, sum(hi)))
    if sum(lo) >= total:
        return lo
    # f(level) = sum(clamp(w * level, lo, hi)) is piecewise linear and increasing; walk its
    # breakpoints (where a job starts growing, where it hits its cap) to solve f(level) = total.
    # Jobs without a floor grow from level 0, so only jobs with one have a start to sort.
    grows = [i for i in range(n) if weights[i] > 0 and hi[i] > lo[i]]
    const = sum(lo)
    slope = sum(weights[i] for i in grows if lo[i] == 0)
    starts = sorted((lo[i] / weights[i], i) for i in grows if lo[i] > 0)
    ends = [hi[i] / weights[i] for i in grows]
    order = sorted(range(len(grows)), key=ends.__getitem__)
    level = 0.0
    s = 0
    for k in order:
        at = ends[k]
        # Starts at or before this end come first, as they would in one merged walk.
        while s < len(starts) and starts[s][0] <= at:
            start, i = starts[s]
            if const + slope * start >= total:
                return _clamped(weights, lo, hi, (total - const) / slope if slope else start)
            const -= lo[i]
            slope += weights[i]
            s += 1
        if const + slope * at >= total:
            return _clamped(weights, lo, hi, (total - const) / slope)
        i = grows[k]
        const += hi[i]
        slope -= weights[i]
        level = at
    return _clamped(weights, lo, hi, level)


def _clamped(
    weights: Sequence[float], lo: Sequence[float], hi: Sequence[float], level: float
) -> list[float]:
    return [
        min(h, max(low, w * level)) if w > 0 else low
        for w, low, h in zip(weights, lo, hi, strict=True)
    ]


def whole_slots(
    capacity: int, shares: Sequence[float], caps: Sequence[int], ties: Sequence[Any]
) -> list[int]:
    """Round real shares down, then give the slots that rounding lost to the largest fractions
    (ties to the smallest ``ties`` entry), never past a cap."""
    targets = [math.floor(v + 1e-9) for v in shares]
    left = min(capacity, sum(max(c, 0) for c in caps)) - sum(targets)
    if left <= 0:
        return targets
    open_ = [i for i in range(len(shares)) if targets[i] < caps[i]]
    # Most jobs sit exactly on a whole share (their cap); only fractions compete.
    fractional = [i for i in open_ if shares[i] - targets[i] > 1e-9]
    fractional.sort(key=lambda i: (targets[i] - shares[i], ties[i]))
    if len(fractional) < left:
        chosen = set(fractional)
        fractional += sorted((i for i in open_ if i not in chosen), key=lambda i: ties[i])
    for i in fractional[:left]:
        targets[i] += 1
    return targets
