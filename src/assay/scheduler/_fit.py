"""Placing one request on concrete slots."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from assay.scheduler._model import Agent, Fitting, Request


def fit(
    req: Request,
    agents: Sequence[Agent],
    free: Mapping[str, Sequence[str]],
    fitting: Fitting,
) -> dict[str, tuple[str, ...]] | None:
    """Slots for ``req`` given the free slots per agent, or None if it does not fit now.

    One agent is used when one has enough free slots (best fit packs, worst fit spreads).
    Otherwise the request takes whole, fully free agents with the same slot count each (a gang:
    all or nothing), unless it must stay on a single node.
    """
    candidates = [a for a in agents if a.enabled and (req.label is None or req.label in a.labels)]
    single = [a for a in candidates if len(free.get(a.id, ())) >= req.slots]
    if single:
        sign = 1 if fitting is Fitting.BEST else -1
        best = min(single, key=lambda a: (sign * len(free[a.id]), a.id))
        return {best.id: tuple(sorted(free[best.id])[: req.slots])}
    if req.is_single_node:
        return None
    by_size: dict[int, list[Agent]] = {}
    for a in candidates:
        if a.slots and len(free.get(a.id, ())) == len(a.slots):
            by_size.setdefault(len(a.slots), []).append(a)
    for size in sorted(by_size, reverse=True):
        if req.slots % size:
            continue
        need = req.slots // size
        group = sorted(by_size[size], key=lambda a: a.id)
        if len(group) >= need:
            return {a.id: tuple(sorted(a.slots)) for a in group[:need]}
    return None
