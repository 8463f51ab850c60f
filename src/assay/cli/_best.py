"""The best checkpoints of an experiment (``assay experiment list-checkpoints --best N``).

As Determined ranks them: each checkpoint by the searcher metric of the validation its trial
reported at the checkpoint's step, best first by the searcher's ``smaller_is_better``. A
checkpoint with no such validation cannot be ranked and is left out, and so is one deleted
from storage (or about to be): it can no longer be used.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from assay import rest
from assay.protocol import CheckpointState

GONE = frozenset({CheckpointState.DELETED, CheckpointState.DELETING})


def _number(value: object) -> float | None:
    """A finite number, or None (the API sends NaN and infinities as strings)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _run_of(checkpoint: rest.Checkpoint) -> int | None:
    """The run that stored it: allocation ids are ``<trial id>.<run>``."""
    _, _, run = (checkpoint.allocation_id or "").rpartition(".")
    return int(run) if run.isdigit() else None


def checkpoint_score(
    checkpoint: rest.Checkpoint, validations: Iterable[rest.Metric], metric: str
) -> float | None:
    """The searcher metric at ``checkpoint``'s step among its trial's validations, if any.

    A step validated more than once (by a run whose steps were redone) counts the report of
    the run that stored the checkpoint; failing that, a report not archived, then the latest.
    """
    run = _run_of(checkpoint)
    candidates = [
        (m.run == run, not m.archived, m.time, score)
        for m in validations
        if m.trial_id == checkpoint.trial_id
        and m.steps_completed == checkpoint.steps_completed
        and (score := _number(m.metrics.get(metric))) is not None
    ]
    return max(candidates)[3] if candidates else None


def best_checkpoints(
    checkpoints: Sequence[rest.Checkpoint],
    validations: Mapping[int, Sequence[rest.Metric]],
    metric: str,
    smaller_is_better: bool,
    limit: int,
) -> list[tuple[rest.Checkpoint, float]]:
    """The ``limit`` best usable checkpoints with their scores, best first.

    ``validations``: each trial's validation reports, by trial id. Ties go to the earlier
    trial, then the earlier step, so the order does not change between calls."""
    scored: list[tuple[rest.Checkpoint, float]] = []
    for ck in checkpoints:
        if ck.state in GONE:
            continue
        score = checkpoint_score(ck, validations.get(ck.trial_id, ()), metric)
        if score is not None:
            scored.append((ck, score))
    sign = 1.0 if smaller_is_better else -1.0
    scored.sort(key=lambda pair: (sign * pair[1], pair[0].trial_id, pair[0].steps_completed))
    return scored[: max(limit, 0)]
