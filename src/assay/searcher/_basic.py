"""The pool search methods: ``single``, ``random``, ``grid``, ``batch``, and the model-based ones
(``tpe``, ``cmaes``, ``qmc``, ``gp``, ``nsga2``), which are a random search whose hyperparameters
come from an Optuna sampler."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from assay.protocol import ExitedReason
from assay.searcher._base import new_request_id, new_trial_seed, rng_state, set_rng_state
from assay.searcher._ops import (
    EVERY_TRIAL_FAILED,
    Close,
    Create,
    Operation,
    Shutdown,
    ValidateAfter,
)
from assay.searcher._source import Outcome, ParamSource, RandomSource
from assay.searcher._space import grid, sample


class _PoolSearch:
    """Shared machinery of methods that run a fixed number of independent trials, each trained to
    ``max_length`` (or, with no ``max_length``, for as long as its code runs), at most
    ``max_concurrent`` at a time. Trials that exit with invalid hyperparameters are replaced and
    do not count toward the total."""

    def __init__(
        self,
        *,
        max_trials: int,
        max_length: int | None,
        max_concurrent: int,
        rng: random.Random,
        source_checkpoint: str | None = None,
    ) -> None:
        self.max_trials = max_trials
        self.max_length = max_length
        self.max_concurrent = max_concurrent if max_concurrent > 0 else max_trials
        self.rng = rng
        self.source_checkpoint = source_checkpoint
        self.created = 0
        self.finished = 0
        self.errored = 0
        self.running: list[str] = []
        self.progress_by_trial: dict[str, float] = {}
        self.last_metric: dict[str, tuple[int, float]] = {}

    def _next_hparams(self, request_id: str) -> dict[str, Any] | None:
        raise NotImplementedError

    def _finished(self, request_id: str, outcome: Outcome, metric: float | None) -> None:
        """Hook: trial ``request_id`` will report nothing more."""

    def _create(self) -> list[Operation]:
        request_id = new_request_id(self.rng)
        hparams = self._next_hparams(request_id)
        if hparams is None:
            return []
        self.created += 1
        self.running.append(request_id)
        return [
            Create(request_id, hparams, new_trial_seed(self.rng), checkpoint=self.source_checkpoint)
        ]

    def _fill(self) -> list[Operation]:
        ops: list[Operation] = []
        while self.created < self.max_trials and len(self.running) < self.max_concurrent:
            new = self._create()
            if not new:
                break
            ops += new
        if not self.running and not ops:
            failed = self.finished > 0 and self.errored == self.finished
            message = EVERY_TRIAL_FAILED if failed else ""
            ops.append(Shutdown(failure=failed, message=message))
        return ops

    def initial_operations(self) -> list[Operation]:
        return self._fill()

    def trial_created(self, request_id: str) -> list[Operation]:
        if self.max_length is None:
            return []
        return [ValidateAfter(request_id, self.max_length)]

    def validation_completed(self, request_id: str, metric: float, length: int) -> list[Operation]:
        self.last_metric[request_id] = (length, metric)
        if self.max_length is None:
            return []
        self.progress_by_trial[request_id] = min(1.0, length / max(self.max_length, 1))
        if length >= self.max_length:
            return [Close(request_id)]
        return []

    def _end(self, request_id: str, outcome: Outcome | None) -> None:
        if request_id in self.running:
            self.running.remove(request_id)
        self.progress_by_trial.pop(request_id, None)
        last = self.last_metric.pop(request_id, None)
        if outcome is None:
            # Closed: complete when it trained the full length (or, code-driven, as long as its
            # code chose); a trial closed short of max_length was stopped early.
            full = last is not None and (self.max_length is None or last[0] >= self.max_length)
            outcome = Outcome.COMPLETE if full else Outcome.PRUNED
        if outcome is Outcome.PRUNED and last is None:
            outcome = Outcome.FAIL
        self._finished(request_id, outcome, None if last is None else last[1])

    def trial_exited_early(self, request_id: str, reason: ExitedReason) -> list[Operation]:
        self._end(
            request_id,
            Outcome.PRUNED if reason is ExitedReason.USER_CANCELED else Outcome.FAIL,
        )
        if reason is ExitedReason.INVALID_HP:
            self.created -= 1
        else:
            self.finished += 1
            if reason is ExitedReason.ERRORED:
                self.errored += 1
        return self._fill()

    def trial_closed(self, request_id: str) -> list[Operation]:
        self._end(request_id, None)
        self.finished += 1
        return self._fill()

    def progress(self, partial: Mapping[str, float]) -> float:
        # Each trial is one share of the total: a finished one a whole share, a running one
        # what it validated at or reported of its one operation (code-driven: of its run),
        # whichever is further.
        if self.max_trials == 0:
            return 1.0
        running = dict.fromkeys([*self.running, *self.progress_by_trial])
        shares = sum(
            max(self.progress_by_trial.get(rid, 0.0), partial.get(rid, 0.0)) for rid in running
        )
        return min(1.0, (self.finished + shares) / self.max_trials)

    def snapshot(self) -> dict[str, Any]:
        return {
            "rng": rng_state(self.rng),
            "created": self.created,
            "finished": self.finished,
            "errored": self.errored,
            "running": list(self.running),
            "progress_by_trial": dict(self.progress_by_trial),
            "last_metric": {k: list(v) for k, v in self.last_metric.items()},
        }

    def restore(self, state: dict[str, Any]) -> None:
        set_rng_state(self.rng, state["rng"])
        self.created = state["created"]
        self.finished = state["finished"]
        self.errored = state["errored"]
        self.running = list(state["running"])
        self.progress_by_trial = dict(state["progress_by_trial"])
        self.last_metric = {k: (int(v[0]), float(v[1])) for k, v in state["last_metric"].items()}


class RandomSearch(_PoolSearch):
    """``random``: ``max_trials`` trials with hyperparameters drawn at random, or from
    ``source`` (``sampler:`` in the config; ``tpe`` and friends are this with an Optuna source).
    """

    def __init__(
        self,
        space: dict[str, Any],
        *,
        max_trials: int,
        max_length: int | None,
        max_concurrent: int,
        rng: random.Random,
        source_checkpoint: str | None = None,
        source: ParamSource | None = None,
    ) -> None:
        super().__init__(
            max_trials=max_trials,
            max_length=max_length,
            max_concurrent=max_concurrent,
            rng=rng,
            source_checkpoint=source_checkpoint,
        )
        self.space = space
        self.source: ParamSource = source if source is not None else RandomSource(space, rng)

    def _next_hparams(self, request_id: str) -> dict[str, Any] | None:
        return self.source.suggest(request_id)

    def _finished(self, request_id: str, outcome: Outcome, metric: float | None) -> None:
        self.source.finish(request_id, outcome, metric)

    def snapshot(self) -> dict[str, Any]:
        return {**super().snapshot(), "source": self.source.snapshot()}

    def restore(self, state: dict[str, Any]) -> None:
        super().restore(state)
        self.source.restore(state["source"])


class SingleSearch(RandomSearch):
    """``single``: one trial. Hyperparameters that are not constants are drawn at random."""

    def __init__(
        self,
        space: dict[str, Any],
        *,
        max_length: int | None,
        rng: random.Random,
        source_checkpoint: str | None = None,
    ) -> None:
        super().__init__(
            space,
            max_trials=1,
            max_length=max_length,
            max_concurrent=1,
            rng=rng,
            source_checkpoint=source_checkpoint,
        )


class _PointSearch(_PoolSearch):
    """One trial per point of a list fixed when the search is built, in order; with
    ``max_trials``, only that many of the first points."""

    def __init__(
        self,
        points: list[dict[str, Any]],
        *,
        max_trials: int | None = None,
        max_length: int | None,
        max_concurrent: int,
        rng: random.Random,
        source_checkpoint: str | None = None,
    ) -> None:
        self.points = points if max_trials is None else points[:max_trials]
        super().__init__(
            max_trials=len(points),
            max_length=max_length,
            max_concurrent=max_concurrent,
            rng=rng,
            source_checkpoint=source_checkpoint,
        )
        self.next_point = 0

    def _next_hparams(self, request_id: str) -> dict[str, Any] | None:
        if self.next_point >= len(self.points):
            return None
        point = self.points[self.next_point]
        self.next_point += 1
        return self._complete(point)

    def _complete(self, point: dict[str, Any]) -> dict[str, Any]:
        return point

    def snapshot(self) -> dict[str, Any]:
        return {**super().snapshot(), "next_point": self.next_point}

    def restore(self, state: dict[str, Any]) -> None:
        super().restore(state)
        self.next_point = state["next_point"]


class GridSearch(_PointSearch):
    """``grid``: one trial per point of the grid (see :func:`assay.searcher.grid`)."""

    def __init__(
        self,
        space: dict[str, Any],
        *,
        max_trials: int | None = None,
        max_length: int | None,
        max_concurrent: int,
        rng: random.Random,
        source_checkpoint: str | None = None,
    ) -> None:
        super().__init__(
            grid(space),
            max_trials=max_trials,
            max_length=max_length,
            max_concurrent=max_concurrent,
            rng=rng,
            source_checkpoint=source_checkpoint,
        )


def merge_point(base: dict[str, Any], point: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``point``'s values over it; nested maps are merged key by key."""
    out = dict(base)
    for key, value in point.items():
        below = out.get(key)
        if isinstance(value, dict) and isinstance(below, dict):
            out[key] = merge_point(below, value)
        else:
            out[key] = value
    return out


class BatchSearch(_PointSearch):
    """``batch`` (NNI's BatchTuner): one trial per given point, in order. Each point is laid
    over a draw from ``space`` (usually all constants), so constants the points leave out still
    reach the trial."""

    def __init__(
        self,
        space: dict[str, Any],
        points: list[dict[str, Any]],
        *,
        max_trials: int | None = None,
        max_length: int | None,
        max_concurrent: int,
        rng: random.Random,
        source_checkpoint: str | None = None,
    ) -> None:
        self.space = space
        super().__init__(
            [dict(p) for p in points],
            max_trials=max_trials,
            max_length=max_length,
            max_concurrent=max_concurrent,
            rng=rng,
            source_checkpoint=source_checkpoint,
        )

    def _complete(self, point: dict[str, Any]) -> dict[str, Any]:
        return merge_point(sample(self.space, self.rng), point)
