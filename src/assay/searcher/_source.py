"""Where a search method gets the hyperparameters of its next trial.

Methods that decide *how long* trials train (random, ASHA, Hyperband) take a :class:`ParamSource`
that decides *what* they train: plain random sampling by default, or a model-based sampler
(``sampler: {name: tpe}`` gives BOHB-like ASHA). A source hears how each trial it suggested
ended, so model-based ones can learn from it.
"""

from __future__ import annotations

import random
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from assay.searcher._space import sample


class Outcome(StrEnum):
    """How a suggested trial ended, as far as its source is concerned."""

    COMPLETE = "complete"
    """It produced the metric the method ranks it by."""
    PRUNED = "pruned"
    """It was stopped early for being bad, or cancelled: a weak signal that its region is poor."""
    FAIL = "fail"
    """It errored or its hyperparameters were invalid: no information about its quality."""


@runtime_checkable
class ParamSource(Protocol):
    """Suggests hyperparameters and learns how the suggested trials ended.

    Pure like a method: its answers depend only on its construction arguments and the calls so
    far, and ``restore(snapshot())`` on a fresh source reproduces every later answer.
    """

    def suggest(self, request_id: str) -> dict[str, Any]:
        """The (nested) hyperparameters for the new trial ``request_id``."""
        ...

    def finish(self, request_id: str, outcome: Outcome, metric: float | None) -> None:
        """Trial ``request_id`` ended; ``metric`` (smaller is better) is set for COMPLETE."""
        ...

    def snapshot(self) -> dict[str, Any]: ...

    def restore(self, state: dict[str, Any]) -> None: ...


class RandomSource:
    """Independent uniform draws from the space, using the owning method's RNG.

    Sharing the method's RNG (rather than holding one) keeps a plain random search's draws a
    function of the single experiment seed, and leaves nothing of its own to snapshot.
    """

    def __init__(self, space: dict[str, Any], rng: random.Random) -> None:
        self.space = space
        self.rng = rng

    def suggest(self, request_id: str) -> dict[str, Any]:
        return sample(self.space, self.rng)

    def finish(self, request_id: str, outcome: Outcome, metric: float | None) -> None:
        return None

    def snapshot(self) -> dict[str, Any]:
        return {}

    def restore(self, state: dict[str, Any]) -> None:
        return None
