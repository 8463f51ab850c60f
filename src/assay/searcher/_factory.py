"""Build an experiment's :class:`Searcher` from its config."""

from __future__ import annotations

import random
from typing import Any

from assay.config import (
    AdaptiveASHAConfig,
    AdaptiveConfig,
    AdaptiveSimpleConfig,
    AsyncHalvingConfig,
    CustomConfig,
    ExperimentConfig,
    GridConfig,
    HyperbandConfig,
    OptunaConfig,
    PBTConfig,
    RandomConfig,
    SearcherConfig,
    SingleConfig,
    SyncHalvingConfig,
)
from assay.errors import InvalidConfig
from assay.searcher._adaptive import adaptive_asha
from assay.searcher._asha import AsyncHalving, AsyncHalvingStopping
from assay.searcher._base import Searcher, SearchMethod
from assay.searcher._basic import GridSearch, RandomSearch, SingleSearch
from assay.searcher._early_stop import CurveFitRule, EarlyStopping, MedianStopRule, StopRule
from assay.searcher._hyperband import hyperband
from assay.searcher._optuna import OptunaSource
from assay.searcher._pbt import PBT
from assay.searcher._source import ParamSource


def search_length(sc: Any) -> tuple[int | None, bool]:
    """The length a searcher plans with, and whether its trials are code-driven.

    ``time_metric`` + ``max_time`` means code-driven with ``max_time`` as the length; otherwise
    ``max_length``; with neither, trials train as long as their code chooses (code-driven).
    """
    time_metric = getattr(sc, "time_metric", None)
    max_length = getattr(sc, "max_length", None)
    if time_metric is not None:
        max_time = getattr(sc, "max_time", None)
        return (None if max_time is None else int(max_time)), True
    if max_length is not None:
        return int(max_length.value), False
    return None, True


def _source(space: dict[str, Any], sampler: Any, seed: int) -> ParamSource | None:
    if sampler is None:
        return None
    return OptunaSource(
        space,
        sampler=sampler.name,
        seed=seed if sampler.seed is None else int(sampler.seed),
        options=dict(sampler.options),
    )


def _rule(cfg: Any) -> StopRule | None:
    if cfg is None:
        return None
    if cfg.name == "medianstop":
        return MedianStopRule(start_step=cfg.start_step, min_trials=cfg.min_trials)
    return CurveFitRule(
        epoch_num=cfg.epoch_num, start_step=cfg.start_step, threshold=cfg.threshold, gap=cfg.gap
    )


def _needs_length(name: str, length: int | None) -> int:
    if length is None:
        raise InvalidConfig(
            f"searcher {name} needs searcher.max_length, or searcher.time_metric with "
            "searcher.max_time, to plan its rungs"
        )
    return length


def make_searcher(
    cfg: ExperimentConfig, seed: int, *, custom_method: SearchMethod | None = None
) -> Searcher:
    """The experiment's searcher, seeded by ``seed`` (the experiment seed).

    ``custom_method`` is the master's subprocess runner for ``custom`` searchers (they need the
    context directory, which this pure package never touches).
    """
    sc = cfg.searcher
    space = dict(cfg.hyperparameters)
    method, code_driven = _method(sc, space, seed, custom_method)
    rule = _rule(getattr(sc, "early_stopping", None))
    if rule is not None:
        method = EarlyStopping(method, rule)
    return Searcher(method, smaller_is_better=sc.smaller_is_better, code_driven=code_driven)


def _method(
    sc: SearcherConfig,
    space: dict[str, Any],
    seed: int,
    custom_method: SearchMethod | None,
) -> tuple[SearchMethod, bool]:
    rng = random.Random(seed)
    checkpoint = sc.source_checkpoint_uuid
    length, code_driven = search_length(sc)
    source = _source(space, getattr(sc, "sampler", None), seed)
    if isinstance(sc, SyncHalvingConfig | AdaptiveConfig | AdaptiveSimpleConfig):
        raise InvalidConfig(
            f"searcher {sc.name} reached end of life in Determined and is not supported; use "
            "adaptive_asha (or async_halving) instead"
        )
    if isinstance(sc, SingleConfig):
        return SingleSearch(space, max_length=length, rng=rng, source_checkpoint=checkpoint), (
            code_driven
        )
    if isinstance(sc, RandomConfig):
        method: SearchMethod = RandomSearch(
            space,
            max_trials=sc.max_trials,
            max_length=length,
            max_concurrent=sc.max_concurrent_trials,
            rng=rng,
            source_checkpoint=checkpoint,
            source=source,
        )
        return method, code_driven
    if isinstance(sc, GridConfig):
        method = GridSearch(
            space,
            max_length=length,
            max_concurrent=sc.max_concurrent_trials,
            rng=rng,
            source_checkpoint=checkpoint,
        )
        return method, code_driven
    if isinstance(sc, OptunaConfig):
        model = OptunaSource(
            space,
            sampler=sc.name,
            seed=seed,
            options=dict(sc.sampler_options),
            n_startup_trials=sc.n_startup_trials,
        )
        method = RandomSearch(
            space,
            max_trials=sc.max_trials,
            max_length=None if code_driven else length,
            max_concurrent=sc.max_concurrent_trials,
            rng=rng,
            source_checkpoint=checkpoint,
            source=model,
        )
        return method, code_driven
    if isinstance(sc, AsyncHalvingConfig):
        common: dict[str, Any] = {
            "max_length": _needs_length(sc.name, length),
            "num_rungs": sc.num_rungs,
            "divisor": sc.divisor,
            "max_trials": sc.max_trials,
            "max_concurrent": sc.max_concurrent_trials,
            "rng": rng,
            "source": source,
            "source_checkpoint": checkpoint,
        }
        if sc.stop_once or code_driven:
            return AsyncHalvingStopping(space, code_driven=code_driven, **common), code_driven
        return AsyncHalving(space, **common), code_driven
    if isinstance(sc, AdaptiveASHAConfig):
        method = adaptive_asha(
            space,
            max_length=_needs_length(sc.name, length),
            max_trials=sc.max_trials,
            rng=rng,
            mode=sc.mode,
            divisor=sc.divisor,
            max_rungs=sc.max_rungs,
            bracket_rungs=list(sc.bracket_rungs) or None,
            max_concurrent=sc.max_concurrent_trials,
            stop_once=sc.stop_once,
            code_driven=code_driven,
            source=source,
            source_checkpoint=checkpoint,
        )
        return method, code_driven
    if isinstance(sc, HyperbandConfig):
        method = hyperband(
            space,
            max_length=_needs_length(sc.name, length),
            rng=rng,
            divisor=sc.divisor,
            max_trials=sc.max_trials,
            max_concurrent=sc.max_concurrent_trials,
            code_driven=code_driven,
            source=source,
            source_checkpoint=checkpoint,
        )
        return method, code_driven
    if isinstance(sc, PBTConfig):
        method = PBT(
            space,
            population_size=sc.population_size,
            num_rounds=sc.num_rounds,
            length_per_round=sc.length_per_round.value,
            truncate_fraction=sc.replace_function.truncate_fraction,
            resample_probability=sc.explore_function.resample_probability,
            perturb_factor=sc.explore_function.perturb_factor,
            rng=rng,
            source_checkpoint=checkpoint,
        )
        return method, False
    if isinstance(sc, CustomConfig):
        if custom_method is None:
            raise InvalidConfig(
                "searcher custom runs the class named by searcher.class in the master, which "
                "needs the experiment's context directory; it cannot be built (or previewed) "
                "from the config alone"
            )
        return custom_method, False
    raise InvalidConfig(f"unknown searcher {sc.name!r}")
