"""Build an experiment's :class:`Searcher` from its config (through the searcher registry)."""

from __future__ import annotations

import random
from typing import Any

from assay.config import ExperimentConfig, SearcherConfig
from assay.searcher._base import Searcher, SearchMethod
from assay.searcher._early_stop import CurveFitRule, EarlyStopping, MedianStopRule, StopRule
from assay.searcher._registry import BuildInputs, build_method


def search_length(sc: SearcherConfig) -> tuple[int | None, bool]:
    """The length a searcher plans its trials to reach, and whether they are code-driven
    (the config's :meth:`plan`)."""
    plan = sc.plan()
    return plan.length, plan.code_driven


def _rule(cfg: Any) -> StopRule | None:
    if cfg is None:
        return None
    if cfg.name == "medianstop":
        return MedianStopRule(start_step=cfg.start_step, min_trials=cfg.min_trials)
    return CurveFitRule(
        epoch_num=cfg.epoch_num, start_step=cfg.start_step, threshold=cfg.threshold, gap=cfg.gap
    )


def make_searcher(
    cfg: ExperimentConfig, seed: int, *, custom_method: SearchMethod | None = None
) -> Searcher:
    """The experiment's searcher, seeded by ``seed`` (the experiment seed).

    ``custom_method`` is the master's subprocess runner for ``custom`` searchers (they need the
    context directory, which this pure package never touches).
    """
    sc = cfg.searcher
    plan = sc.plan()
    given = BuildInputs(
        space=dict(cfg.hyperparameters),
        seed=seed,
        rng=random.Random(seed),
        plan=plan,
        custom_method=custom_method,
    )
    method = build_method(sc, given)
    rule = _rule(getattr(sc, "early_stopping", None))
    if rule is not None:
        method = EarlyStopping(method, rule)
    return Searcher(method, smaller_is_better=sc.smaller_is_better, code_driven=plan.code_driven)
