"""The protocol a user's own searcher implements (``searcher: {name: custom, class: mod:Cls}``).

The class lives in the experiment's context directory and runs in a subprocess of the master,
so a crash in it fails the experiment (with its traceback) and never the master. It is built
with the section's ``class_args`` as keyword arguments (none by default), then driven by these
calls, each with a :class:`SearchContext`::

    from assay.searcher import SearchContext

    class MySearcher:
        def __init__(self) -> None:
            self.best: float | None = None

        def initial_operations(self, ctx: SearchContext) -> list:
            return [ctx.create_trial(ctx.sample()) for _ in range(4)]

        def on_trial_created(self, ctx, request_id):           # optional
            return [ctx.validate_after(request_id, 100)]

        def on_validation_completed(self, ctx, request_id, metric, length):
            return [ctx.close(request_id)]

        def on_trial_closed(self, ctx, request_id):
            return [ctx.shutdown()] if ... else []

        def on_trial_exited_early(self, ctx, request_id, reason):   # reason: "errored", ...
            return [ctx.create_trial(ctx.sample())]

        def progress(self, ctx) -> float: ...                 # optional
        def save_state(self): return {"best": self.best}     # optional; any JSON value
        def load_state(self, state): self.best = state["best"]

Every ``on_*`` call returns a list of operations, built with the context's helpers. ``metric``
is always *smaller is better* (assay flips the sign for ``smaller_is_better: false``). The
context's ``rng`` is seeded from the experiment seed and saved with the searcher's state, so a
searcher that draws only from it is reproducible across master restarts. The method must close
every trial it creates and eventually return ``ctx.shutdown()``.
"""

from __future__ import annotations

import random
from typing import Any, Protocol

from assay.config import parse_hyperparameters
from assay.searcher._base import new_request_id, new_trial_seed
from assay.searcher._ops import Close, Create, Operation, Shutdown, ValidateAfter
from assay.searcher._space import sample


class SearchContext:
    """What a custom searcher is given with every call: the search space, a seeded RNG, and
    constructors for the operations it returns."""

    def __init__(
        self,
        hyperparameters: dict[str, Any],
        rng: random.Random,
        *,
        smaller_is_better: bool = True,
        settings: dict[str, Any] | None = None,
    ) -> None:
        self.hyperparameters = hyperparameters
        """The experiment's ``hyperparameters`` section, as JSON."""
        self.space = parse_hyperparameters(hyperparameters)
        self.rng = rng
        self.smaller_is_better = smaller_is_better
        self.settings = dict(settings or {})
        """The experiment's ``searcher`` section, as JSON: the class's own settings with it."""

    def sample(self) -> dict[str, Any]:
        """A random point of the search space (drawn from ``rng``)."""
        return sample(self.space, self.rng)

    def create_trial(self, hparams: dict[str, Any], checkpoint: str | None = None) -> Create:
        """An operation creating a trial, with a fresh request id and trial seed."""
        return Create(new_request_id(self.rng), hparams, new_trial_seed(self.rng), checkpoint)

    def validate_after(self, request_id: str, length: int) -> ValidateAfter:
        return ValidateAfter(request_id, int(length))

    def close(self, request_id: str) -> Close:
        return Close(request_id)

    def shutdown(self, *, failure: bool = False, message: str = "") -> Shutdown:
        return Shutdown(failure=failure, message=message)


class CustomSearcher(Protocol):
    """The methods a custom searcher class implements (``on_trial_created``, ``progress``,
    ``save_state`` and ``load_state`` are optional)."""

    def initial_operations(self, ctx: SearchContext) -> list[Operation]: ...

    def on_validation_completed(
        self, ctx: SearchContext, request_id: str, metric: float, length: int
    ) -> list[Operation]: ...

    def on_trial_closed(self, ctx: SearchContext, request_id: str) -> list[Operation]: ...

    def on_trial_exited_early(
        self, ctx: SearchContext, request_id: str, reason: str
    ) -> list[Operation]: ...

    def progress(self, ctx: SearchContext) -> float: ...

    def save_state(self) -> Any: ...

    def load_state(self, state: Any) -> None: ...
