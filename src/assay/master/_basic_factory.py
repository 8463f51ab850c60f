"""Interim searcher factory for single/random/grid until ``assay.searcher.make_searcher`` lands."""

from __future__ import annotations

import random

from assay.config import ExperimentConfig
from assay.searcher import GridSearch, RandomSearch, Searcher, SearchMethod, SingleSearch


def make_searcher(cfg: ExperimentConfig, seed: int) -> Searcher:
    sc = cfg.searcher
    rng = random.Random(seed)
    length = getattr(sc, "max_length", None)
    max_length = length.value if length is not None else None
    source = getattr(sc, "source_checkpoint_uuid", None)
    method: SearchMethod
    if sc.name == "single":
        method = SingleSearch(
            cfg.hyperparameters, max_length=max_length, rng=rng, source_checkpoint=source
        )
    elif sc.name == "random":
        method = RandomSearch(
            cfg.hyperparameters,
            max_trials=sc.max_trials,
            max_length=max_length,
            max_concurrent=sc.max_concurrent_trials,
            rng=rng,
            source_checkpoint=source,
        )
    elif sc.name == "grid":
        method = GridSearch(
            cfg.hyperparameters,
            max_length=max_length,
            max_concurrent=sc.max_concurrent_trials,
            rng=rng,
            source_checkpoint=source,
        )
    else:
        raise NotImplementedError(sc.name)
    return Searcher(method, smaller_is_better=sc.smaller_is_better, code_driven=max_length is None)
