"""How long an agent waits before it connects to its master again."""

from __future__ import annotations

import random

FIRST_SECONDS = 0.1
CAP_SECONDS = 2.0
"""A restarted master is found within two seconds of answering (an attempt it refuses costs it
nothing)."""


class Backoff:
    """Delays doubling from :data:`FIRST_SECONDS` up to :data:`CAP_SECONDS`, each drawn at random
    from the upper half of its step: a thousand agents that lost their master together come
    back spread out, not in waves that each cost it a thousand handshakes at once (benchmark
    B13: at 1,000 agents, in-step reconnects kept a loaded master from catching up)."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()
        self._step = FIRST_SECONDS

    def reset(self) -> None:
        """Connected: the next loss starts from the first step again."""
        self._step = FIRST_SECONDS

    def next(self) -> float:
        """The delay before the next attempt."""
        delay = self._rng.uniform(self._step / 2, self._step)
        self._step = min(self._step * 2, CAP_SECONDS)
        return delay
