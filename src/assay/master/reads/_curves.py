"""Learning curves of many trials in one answer: one metric of one group per trial, each
series downsampled to at most so many points (a chart is only so many pixels wide)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from assay import rest


def downsample(count: int, most: int) -> range | list[int]:
    """Indices of ``most`` evenly spaced items of ``count`` (all when no more), the first and
    the last among them."""
    if count <= most:
        return range(count)
    return [round(i * (count - 1) / (most - 1)) for i in range(most)]


def pick(
    names: Sequence[tuple[str, str]], group: str | None, metric: str | None, default: str
) -> tuple[str, str]:
    """The (group, metric) to draw: as asked; what is not asked from ``default``
    (``group/name``) when the trials reported it, else from the first name they reported."""
    shown = {f"{g}/{n}" for g, n in names}
    fallback = default if default in shown else min(shown, default="/")
    picked_group, _, picked_metric = fallback.partition("/")
    return (picked_group if group is None else group, picked_metric if metric is None else metric)


def series_of(
    rows: Iterable[Sequence[Any]],
    names: Sequence[tuple[str, str]],
    trial_ids: Sequence[int],
    group: str,
    metric: str,
    most: int,
    *,
    times: bool = False,
) -> rest.MetricSeriesList:
    """The curves of ``metric`` of ``trial_ids`` from ``rows`` (trial id, steps, values of
    ``group``, report time, by trial and step); a non-numeric or non-finite value is left out.
    With ``times``, each point's report time too."""
    points: dict[int, tuple[list[int], list[float], list[float]]] = {}
    for trial_id, steps, values, at in rows:
        value = values.get(metric)
        if not isinstance(value, int | float) or isinstance(value, bool):
            continue
        if not math.isfinite(value):
            continue
        xs, ys, ts = points.setdefault(trial_id, ([], [], []))
        xs.append(steps)
        ys.append(float(value))
        ts.append(float(at))
    out = []
    for trial_id in trial_ids:
        xs, ys, ts = points.get(trial_id, ([], [], []))
        keep = downsample(len(xs), most)
        out.append(
            rest.MetricSeries(
                trial_id=trial_id,
                steps=[xs[i] for i in keep],
                values=[ys[i] for i in keep],
                times=[ts[i] for i in keep] if times else None,
            )
        )
    return rest.MetricSeriesList(
        names=[f"{g}/{n}" for g, n in names], group=group, metric=metric, series=out
    )
