"""Weighted max-min fair shares of a pool's slots (progressive filling), real and in slots."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


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
    lo = {k: float(min(c.floor, c.cap)) for k, c in claims.items()}
    hi = {k: float(max(c.cap, 0)) for k, c in claims.items()}
    total = float(min(capacity, sum(hi.values())))
    if sum(lo.values()) >= total:
        return lo
    # f(level) = sum(clamp(w * level, lo, hi)) is piecewise linear and increasing; walk its
    # breakpoints (where a job starts growing, where it hits its cap) to solve f(level) = total.
    events: list[tuple[float, int, str]] = []
    for k, c in claims.items():
        if c.weight > 0 and hi[k] > lo[k]:
            events.append((lo[k] / c.weight, 0, k))
            events.append((hi[k] / c.weight, 1, k))
    events.sort()
    const = sum(lo.values())
    slope = 0.0
    level = 0.0
    for at, kind, k in events:
        if const + slope * at >= total:
            break
        weight = claims[k].weight
        if kind == 0:
            const -= lo[k]
            slope += weight
        else:
            const += hi[k]
            slope -= weight
        level = at
    else:
        at = math.inf
    if slope > 0:
        level = min(at, (total - const) / slope)
    return {
        k: min(hi[k], max(lo[k], c.weight * level)) if c.weight > 0 else lo[k]
        for k, c in claims.items()
    }


def slot_targets(
    capacity: int, claims: Mapping[str, Claim], order: Sequence[str] | None = None
) -> dict[str, int]:
    """Fair shares rounded to whole slots: each within one slot of its real share, between its
    floor and cap, adding up to min(capacity, sum of caps) when the floors allow.

    Slots left by rounding down go to the largest fractions, ties to the job first in ``order``
    (default: sorted ids).
    """
    shares = fair_shares(capacity, claims)
    targets = {k: math.floor(v + 1e-9) for k, v in shares.items()}
    total = min(capacity, sum(max(c.cap, 0) for c in claims.values()))
    left = total - sum(targets.values())
    if left > 0:
        rank = {k: i for i, k in enumerate(order if order is not None else sorted(claims))}
        fractions = sorted(
            (k for k in claims if targets[k] < claims[k].cap),
            key=lambda k: (-(shares[k] - targets[k]), rank.get(k, len(rank)), k),
        )
        for k in fractions[:left]:
            targets[k] += 1
    return targets
