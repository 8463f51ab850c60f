"""Choosing which running allocations to preempt so that one request fits."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from assay.scheduler._index import PoolState
from assay.scheduler._model import Placement, Request, Running


def choose_victims(
    req: Request, state: PoolState, candidates: Iterable[Running]
) -> tuple[list[Running], Placement] | None:
    """The fewest needed victims, taken from ``candidates`` in their order, that let ``req`` fit.

    ``candidates`` are the allocations the policy allows to be preempted for ``req``, most
    preferred victim first. Victims are added in that order until the request would fit on the
    slots free soon plus theirs; then every victim whose removal still leaves a fit is dropped,
    last added first, so each victim returned is needed: without any one of them the request
    does not fit. Only valid when ``state.fit_soon(req)`` found no placement.
    """
    taken: list[Running] = []
    found = False
    extra: dict[str, int] = {}
    full = _full_counts(req, state)
    for victim in candidates:
        useful = False
        for agent_id, slot_ids in victim.assignment.items():
            if not slot_ids or not state.offers(agent_id, req.label):
                continue
            useful = True
            more = extra.get(agent_id, 0) + len(slot_ids)
            extra[agent_id] = more
            total = state.soon.count(agent_id) + more
            if total >= req.slots:
                found = True
                continue
            size = state.size[agent_id]
            if total == size and size in full:
                full[size] += 1
                if full[size] >= req.slots // size:
                    found = True
        if useful:
            taken.append(victim)
        if found:
            break
    if not found:
        return None
    return settle(req, state, taken)


def settle(
    req: Request, state: PoolState, taken: list[Running]
) -> tuple[list[Running], Placement] | None:
    """From victims ``taken`` in order of preference, with which ``req`` fits: the placement,
    and the victims it needs, every one of them needed."""
    placement = state.fit_with(req, _slots_of(taken, state))
    if placement is None:  # pragma: no cover - the counts above and fit_with agree
        return None
    kept = [v for v in taken if any(a in placement for a in v.assignment)]
    for i in range(len(kept) - 1, -1, -1):
        without = kept[:i] + kept[i + 1 :]
        if fits_with(req, state, without):
            kept = without
    final = state.fit_with(req, _slots_of(kept, state))
    if final is None:  # pragma: no cover - kept always fits
        return None
    return kept, final


def fits_with(req: Request, state: PoolState, victims: Sequence[Running]) -> bool:
    """Whether ``req`` would fit on the soon-free slots plus those of ``victims``."""
    extra: dict[str, int] = {}
    for victim in victims:
        for agent_id, slot_ids in victim.assignment.items():
            if slot_ids and state.offers(agent_id, req.label):
                extra[agent_id] = extra.get(agent_id, 0) + len(slot_ids)
    full = _full_counts(req, state)
    for agent_id, more in extra.items():
        total = state.soon.count(agent_id) + more
        if total >= req.slots:
            return True
        size = state.size[agent_id]
        if total == size and size in full:
            full[size] += 1
    return any(count >= req.slots // size for size, count in full.items())


def _full_counts(req: Request, state: PoolState) -> dict[int, int]:
    """Per agent size that could host a gang of ``req``: how many such agents are fully free
    soon. Empty when the request may not spread over agents."""
    if req.is_single_node:
        return {}
    view = state.soon.view(req.label)
    return {
        size: len(view.full[size])
        for size in view.sizes
        if size < req.slots and req.slots % size == 0
    }


def _slots_of(victims: Sequence[Running], state: PoolState) -> dict[str, list[str]]:
    slots: dict[str, list[str]] = {}
    for victim in victims:
        for agent_id, slot_ids in victim.assignment.items():
            if slot_ids and agent_id in state.size:
                slots.setdefault(agent_id, []).extend(slot_ids)
    return slots
