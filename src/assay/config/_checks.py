"""Checks beyond the schema that Determined's master makes before it accepts an experiment.

They run on the JSON form of a config, so they also run on a raw config that failed schema
validation: a person sees every problem in one message. Anything not shaped as expected is
skipped here; the schema reports it.
"""

from __future__ import annotations

import math
from typing import Any

from assay.config._durations import adaptdl_nfs_problem
from assay.config._experiment import ExperimentConfig
from assay.config._hpgrid import count_hyperparameters, grid_points, grid_problems
from assay.config._limits import (
    DB_INT_MAX,
    MAX_HYPERPARAMETERS,
    MAX_RUNGS,
    MAX_TRIALS,
    MAX_TRIALS_AT_ONCE,
    count,
)
from assay.config._searcher import (
    EOL_SEARCHERS,
    LENGTH_DRIVEN,
    OPTUNA_SEARCHERS,
    GridConfig,
    HyperbandConfig,
    PBTConfig,
)
from assay.errors import ErrorDetail

_TIME_BOUND = (*LENGTH_DRIVEN, *OPTUNA_SEARCHERS)


def check_submittable(
    cfg: ExperimentConfig, *, max_grid_points: int | None = None, stored: bool = False
) -> list[ErrorDetail]:
    """Every reason the master would refuse ``cfg`` although it fits the schema.

    ``max_grid_points`` is the master's ``limits.max_grid_points``; None checks a grid against
    the absolute limit only. ``stored``: an experiment the master already holds, whose
    Trial-class entrypoint (accepted before that was refused) is let through.
    """
    problems = semantic_problems(cfg.to_json(), stored=stored)
    if not problems:
        problems += size_problems(cfg, max_grid_points)
    return problems


def size_problems(cfg: ExperimentConfig, max_grid_points: int | None) -> list[ErrorDetail]:
    """What would make the search too big for the master, worked out without building it."""
    problems: list[ErrorDetail] = []
    hps = dict(cfg.hyperparameters)
    defined = count_hyperparameters(hps)
    if defined > MAX_HYPERPARAMETERS:
        problems.append(
            ErrorDetail(
                "hyperparameters",
                f"has {count(defined)} hyperparameters; at most {count(MAX_HYPERPARAMETERS)}",
            )
        )
    sc = cfg.searcher
    planned: int | None = getattr(sc, "max_trials", None)
    if isinstance(sc, GridConfig):
        limit = MAX_TRIALS if max_grid_points is None else max_grid_points
        points = grid_points(hps, stop_after=limit)
        if points > limit:
            exact = grid_points(hps, stop_after=10**30)
            shown = count(exact) if exact <= 10**30 else "over 10^30"
            how = (
                "the most any master accepts"
                if max_grid_points is None
                else "this master's limit; its limits.max_grid_points setting raises it"
            )
            problems.append(
                ErrorDetail(
                    "hyperparameters",
                    f"the grid has {shown} points, over the limit of {count(limit)} ({how}); "
                    "lower the hyperparameters' counts",
                )
            )
            return problems
        planned = points if sc.max_trials is None else min(points, sc.max_trials)
    length = sc.plan().length
    if isinstance(sc, HyperbandConfig) and length is not None:
        problems += _hyperband_problems(length, sc.divisor)
        if problems:
            return problems
        if planned is None:
            planned = hyperband_trials(length, sc.divisor)
            if planned > MAX_TRIALS:
                problems.append(
                    ErrorDetail(
                        "searcher.max_trials",
                        f"without max_trials, hyperband would start {count(planned)} trials "
                        f"(over the limit of {count(MAX_TRIALS)}); give max_trials",
                    )
                )
                return problems
    if isinstance(sc, PBTConfig) and (sc.plan().longest or 0) > DB_INT_MAX:
        problems.append(
            ErrorDetail(
                "searcher.num_rounds",
                f"{sc.num_rounds} rounds of {sc.length_per_round} train a trial to "
                f"{count(sc.plan().longest or 0)}; lengths may be at most {count(DB_INT_MAX)}",
            )
        )
    at_once = getattr(sc, "max_concurrent_trials", None)
    if at_once == 0 and planned is not None and planned > MAX_TRIALS_AT_ONCE:
        problems.append(
            ErrorDetail(
                "searcher.max_concurrent_trials",
                f"0 (no limit) would let all {count(planned)} trials start at once; at most "
                f"{count(MAX_TRIALS_AT_ONCE)} may: give a number up to that",
            )
        )
    return problems


def hyperband_rungs(max_length: int, divisor: float) -> int:
    """The rungs of hyperband's most aggressive bracket: ``floor(log_divisor(max_length)) + 1``
    (``s_max + 1`` in ``assay.searcher``'s hyperband)."""
    if max_length < 1:
        return 1
    # The log estimates; the loop settles the floor exactly, as the searcher computes it.
    s_max = max(0, int(math.log(max_length) / math.log(divisor)) - 1)
    while divisor ** (s_max + 1) <= max_length:
        s_max += 1
    return s_max + 1


def hyperband_trials(max_length: int, divisor: float) -> int:
    """How many trials hyperband starts without ``max_trials`` (the searcher's rule: bracket
    ``s`` starts ``ceil((s_max + 1) / (s + 1) * divisor**s)``)."""
    rungs = hyperband_rungs(max_length, divisor)
    return sum(math.ceil(rungs / (s + 1) * divisor**s) for s in range(rungs))


def _hyperband_problems(length: int, divisor: float) -> list[ErrorDetail]:
    estimate = math.log(max(length, 1)) / math.log(divisor) + 1
    # The estimate first: counting the rungs exactly takes as many steps as there are.
    if estimate > MAX_RUNGS + 1 or hyperband_rungs(length, divisor) > MAX_RUNGS:
        return [
            ErrorDetail(
                "searcher.divisor",
                f"hyperband would plan {int(estimate)} rungs (log of the length {count(length)} "
                f"to the base divisor {divisor}); at most {MAX_RUNGS}: raise divisor",
            )
        ]
    return []


def semantic_problems(data: Any, *, stored: bool = False) -> list[ErrorDetail]:
    """:func:`check_submittable` on the JSON form of a config (possibly not schema-valid)."""
    if not isinstance(data, dict):
        return []
    problems: list[ErrorDetail] = []
    if data.get("entrypoint") is None:
        problems.append(ErrorDetail("entrypoint", "required"))
    nfs = None if stored else adaptdl_nfs_problem(data.get("adaptdl"))
    if nfs is not None:
        problems.append(nfs)
    searcher = data.get("searcher")
    if searcher is None:
        problems.append(ErrorDetail("searcher", "required"))
    elif isinstance(searcher, dict):
        problems.extend(_searcher_problems(searcher))
        hps = data.get("hyperparameters")
        if searcher.get("name") == "grid" and isinstance(hps, dict):
            problems.extend(grid_problems(hps, "hyperparameters"))
    return problems


def _searcher_problems(searcher: dict[str, Any]) -> list[ErrorDetail]:
    name = searcher.get("name")
    problems: list[ErrorDetail] = []
    if name in EOL_SEARCHERS:
        problems.append(
            ErrorDetail(
                "searcher.name",
                f"the {name} searcher has reached end of life and is no longer supported; "
                "use adaptive_asha instead",
            )
        )
    if searcher.get("metric") is None:
        problems.append(ErrorDetail("searcher.metric", "required"))
    if name in _TIME_BOUND:
        problems.extend(_length_problems(str(name), searcher))
    return problems


def _length_problems(name: str, searcher: dict[str, Any]) -> list[ErrorDetail]:
    has_length = searcher.get("max_length") is not None
    has_metric = searcher.get("time_metric") is not None
    has_time = searcher.get("max_time") is not None
    if has_length and (has_metric or has_time):
        return [
            ErrorDetail(
                "searcher.max_length",
                "give either max_length, or time_metric and max_time, not both",
            )
        ]
    if has_metric and not has_time:
        return [ErrorDetail("searcher.max_time", "required when time_metric is set")]
    if has_time and not has_metric:
        return [ErrorDetail("searcher.time_metric", "required when max_time is set")]
    if not (has_length or has_metric) and name in LENGTH_DRIVEN:
        return [
            ErrorDetail(
                "searcher",
                f"the {name} searcher needs max_length, or time_metric and max_time, to know "
                "how long trials may train",
            )
        ]
    return []
