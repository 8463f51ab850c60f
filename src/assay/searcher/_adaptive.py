"""``adaptive_asha``: several ASHA brackets of different aggressiveness, run as a tournament.

Determined's rules: ``max_rungs`` is capped by ``floor(log(max_length)/log(divisor)) + 1`` and
``floor(log(max_trials)/log(divisor)) + 1``; the brackets are ``[max]`` (aggressive),
``[(max-1)//2 + 1 .. max]`` (standard) or ``[1 .. max]`` (conservative) rungs, unless
``bracket_rungs`` names them; brackets with more rungs (more early stopping) come first; trials
are split in proportion to ``divisor**(r-1) / r`` (at least one each, the remainder to the first
bracket); concurrency is split evenly, the remainder to the first brackets.
"""

from __future__ import annotations

import math
import random
from enum import StrEnum
from typing import Any

from assay.searcher._asha import AsyncHalving, AsyncHalvingStopping
from assay.searcher._base import SearchMethod
from assay.searcher._source import ParamSource
from assay.searcher._tournament import Tournament


class AdaptiveMode(StrEnum):
    AGGRESSIVE = "aggressive"
    STANDARD = "standard"
    CONSERVATIVE = "conservative"


def capped_max_rungs(max_rungs: int, max_length: int, max_trials: int, divisor: float) -> int:
    by_length = int(math.log(max(max_length, 1)) / math.log(divisor)) + 1
    by_trials = int(math.log(max(max_trials, 1)) / math.log(divisor)) + 1
    return max(1, min(max_rungs, by_length, by_trials))


def mode_brackets(mode: AdaptiveMode | str, max_rungs: int) -> list[int]:
    mode = AdaptiveMode(mode)
    if mode is AdaptiveMode.AGGRESSIVE:
        return [max_rungs]
    if mode is AdaptiveMode.STANDARD:
        return list(range((max_rungs - 1) // 2 + 1, max_rungs + 1))
    return list(range(1, max_rungs + 1))


def bracket_max_trials(max_trials: int, divisor: float, brackets: list[int]) -> list[int]:
    """Trials per bracket, for roughly equal compute per bracket."""
    weights = [divisor ** (rungs - 1) / rungs for rungs in brackets]
    total = sum(weights)
    counts = [max(int(w / total * max_trials), 1) for w in weights]
    counts[0] += max(max_trials - sum(counts), 0)
    return counts


def bracket_max_concurrent(max_concurrent: int, divisor: float, max_trials: list[int]) -> list[int]:
    """Concurrency per bracket: ``max_concurrent`` split evenly, or by default enough for the
    smallest bracket to keep ``divisor`` trials going."""
    count = len(max_trials)
    if max_concurrent <= 0:
        return [max(max_trials[-1], int(divisor))] * count
    spread = max(max_concurrent, count)
    caps = [spread // count] * count
    for i in range(spread % count):
        caps[i] += 1
    return caps


def adaptive_brackets(
    *,
    mode: AdaptiveMode | str,
    max_rungs: int,
    max_length: int,
    max_trials: int,
    divisor: float,
    bracket_rungs: list[int] | None = None,
) -> list[int]:
    """The number of rungs of each bracket, most aggressive first."""
    if bracket_rungs:
        brackets = list(bracket_rungs)
    else:
        brackets = mode_brackets(mode, capped_max_rungs(max_rungs, max_length, max_trials, divisor))
    return sorted(brackets, reverse=True)


def adaptive_asha(
    space: dict[str, Any],
    *,
    max_length: int,
    max_trials: int,
    rng: random.Random,
    mode: AdaptiveMode | str = AdaptiveMode.STANDARD,
    divisor: float = 4.0,
    max_rungs: int = 5,
    bracket_rungs: list[int] | None = None,
    max_concurrent: int = 0,
    stop_once: bool = False,
    code_driven: bool = False,
    source: ParamSource | None = None,
    source_checkpoint: str | None = None,
) -> Tournament:
    """Build the ``adaptive_asha`` method. ``max_length`` is ``max_time`` when code-driven.

    Code-driven searches always stop rather than promote (a trial whose code decides how long
    it trains cannot be paused and resumed by the searcher), as Determined does.
    """
    brackets = adaptive_brackets(
        mode=mode,
        max_rungs=max_rungs,
        max_length=max_length,
        max_trials=max_trials,
        divisor=divisor,
        bracket_rungs=bracket_rungs,
    )
    trials = bracket_max_trials(max_trials, divisor, brackets)
    caps = bracket_max_concurrent(max_concurrent, divisor, trials)
    methods: list[SearchMethod] = []
    for rungs, n, cap in zip(brackets, trials, caps, strict=True):
        common: dict[str, Any] = {
            "max_length": max_length,
            "num_rungs": rungs,
            "divisor": divisor,
            "max_trials": n,
            "max_concurrent": cap,
            "rng": random.Random(rng.getrandbits(64)),
            "source": source,
            "own_source": source is None,
            "source_checkpoint": source_checkpoint,
        }
        if stop_once or code_driven:
            methods.append(AsyncHalvingStopping(space, code_driven=code_driven, **common))
        else:
            methods.append(AsyncHalving(space, **common))
    return Tournament(
        methods,
        max_concurrent=max_concurrent,
        code_driven=code_driven,
        shared_source=source,
    )
