"""How far an ASHA search has got, read from a searcher's snapshot: each bracket's rungs, how
many trials reached each, how many are training towards it and how many went on.

The snapshot is what the master stores with every event (``Searcher.snapshot()``), so this
works for an ended experiment as well as a live one, without rebuilding its searcher. Halving
methods (:mod:`assay.searcher._asha`) are found wherever they sit: alone, as the brackets of a
:class:`~assay.searcher._tournament.Tournament` (``adaptive_asha``, code-driven
``hyperband``), or inside the early-stopping wrapper. Other methods have no rungs to count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from assay.searcher._base import WORST_METRIC


@dataclass(frozen=True)
class RungCount:
    """One rung of one bracket."""

    length: int
    """The length (in the searcher's unit) a trial trains to for this rung."""
    reached: int
    """Trials with a result here (a trial that exited early counts, with the worst result)."""
    training: int
    """Trials training towards this rung now."""
    promoted: int
    """Trials with a result here that went on to a later rung."""
    best: float | None
    """The best real result here, as methods see metrics (smaller is better); None when no
    trial has one."""


@dataclass(frozen=True)
class BracketCount:
    """One bracket: its rungs, lowest first, and the trials it has created."""

    rungs: tuple[RungCount, ...]
    trials: int
    """Trials the bracket created, not counting those with invalid hyperparameters."""


def count_rungs(state: dict[str, Any]) -> BracketCount:
    """The rungs of one halving method, from its ``snapshot()``.

    A trial counts as promoted from rung ``i`` when its current rung is above ``i``: the
    promoting variant moves a trial up when it promotes it, the stopping variant when it lets
    it continue, so one rule serves both.
    """
    trial_rung = {str(k): int(v) for k, v in state["trial_rung"].items()}
    rungs: list[RungCount] = []
    for index, raw in enumerate(state["rungs"]):
        entries = raw["entries"]
        real = [float(metric) for metric, _, _ in entries if float(metric) < WORST_METRIC]
        rungs.append(
            RungCount(
                length=int(raw["length"]),
                reached=len(entries),
                training=max(int(raw["outstanding"]), 0),
                promoted=sum(1 for _, rid, _ in entries if trial_rung.get(str(rid), 0) > index),
                best=min(real) if real else None,
            )
        )
    return BracketCount(tuple(rungs), trials=len(trial_rung) - int(state.get("invalid", 0)))


def _is_halving(state: dict[str, Any]) -> bool:
    return isinstance(state.get("rungs"), list) and isinstance(state.get("trial_rung"), dict)


def halving_brackets(method_state: Any) -> list[BracketCount]:
    """Every halving bracket in a search method's snapshot (``Searcher.snapshot()["method"]``),
    in the order the method holds them; empty for methods without rungs."""
    if not isinstance(method_state, dict):
        return []
    if _is_halving(method_state):
        return [count_rungs(method_state)]
    methods = method_state.get("methods")
    if isinstance(methods, list):
        return [b for m in methods for b in halving_brackets(m)]
    if "inner" in method_state:
        return halving_brackets(method_state["inner"])
    return []
