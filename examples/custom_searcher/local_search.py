"""A custom searcher: a few random trials, then each new trial a step from the best point so far.

assay runs this class in a subprocess of the master (``searcher: {name: custom, class:
local_search:LocalSearch}``); ``class_args`` from the config are its constructor's arguments and
the rest of the ``searcher`` section is ``ctx.settings``. Every ``on_*`` call returns operations
built with the context's helpers; ``metric`` is always smaller-is-better. All randomness comes
from ``ctx.rng``, which assay saves with ``save_state`` so a master restart resumes the search
exactly.
"""

from __future__ import annotations

from typing import Any

from assay.searcher import Create, Operation, SearchContext


class LocalSearch:
    def __init__(self, initial_trials: int = 3, length: int = 200, step: float = 0.3) -> None:
        self.initial_trials = initial_trials
        self.length = length
        self.step = step
        self.hparams: dict[str, dict[str, Any]] = {}  # request id -> its hyperparameters
        self.best: tuple[float, dict[str, Any]] | None = None
        self.created = 0
        self.ended = 0

    def _max_trials(self, ctx: SearchContext) -> int:
        return int(ctx.settings.get("max_trials") or 8)

    def _create(self, ctx: SearchContext, hparams: dict[str, Any]) -> Create:
        op = ctx.create_trial(hparams)
        self.hparams[op.request_id] = hparams
        self.created += 1
        return op

    def _neighbour(self, ctx: SearchContext) -> dict[str, Any]:
        """A step of ``step`` from the best point toward a random one. A blend of two points
        of the space stays inside the space, so no bounds need checking here."""
        fresh = ctx.sample()
        if self.best is None:
            return fresh
        point: dict[str, Any] = {}
        for name, best in self.best[1].items():
            other = fresh[name]
            if isinstance(best, bool) or not isinstance(best, int | float):
                # Categorical (or constant): occasionally try another value.
                point[name] = other if ctx.rng.random() < self.step else best
            elif isinstance(best, int) and isinstance(other, int):
                point[name] = round(best + self.step * (other - best))
            else:
                point[name] = best + self.step * (other - best)
        return point

    def initial_operations(self, ctx: SearchContext) -> list[Operation]:
        count = min(self.initial_trials, self._max_trials(ctx))
        return [self._create(ctx, ctx.sample()) for _ in range(count)]

    def on_trial_created(self, ctx: SearchContext, request_id: str) -> list[Operation]:
        return [ctx.validate_after(request_id, self.length)]

    def on_validation_completed(
        self, ctx: SearchContext, request_id: str, metric: float, length: int
    ) -> list[Operation]:
        if self.best is None or metric < self.best[0]:
            self.best = (metric, self.hparams[request_id])
        return [ctx.close(request_id)]

    def _ended(self, ctx: SearchContext) -> list[Operation]:
        self.ended += 1
        if self.created < self._max_trials(ctx):
            return [self._create(ctx, self._neighbour(ctx))]
        return [ctx.shutdown()] if self.ended == self.created else []

    def on_trial_closed(self, ctx: SearchContext, request_id: str) -> list[Operation]:
        return self._ended(ctx)

    def on_trial_exited_early(
        self, ctx: SearchContext, request_id: str, reason: str
    ) -> list[Operation]:
        return self._ended(ctx)

    def progress(self, ctx: SearchContext) -> float:
        return self.ended / self._max_trials(ctx)

    def save_state(self) -> Any:
        return {
            "hparams": self.hparams,
            "best": list(self.best) if self.best else None,
            "created": self.created,
            "ended": self.ended,
        }

    def load_state(self, state: Any) -> None:
        self.hparams = state["hparams"]
        self.best = (state["best"][0], state["best"][1]) if state["best"] else None
        self.created = state["created"]
        self.ended = state["ended"]
