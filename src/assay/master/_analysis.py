"""The Experiment page's analyses: how far the search has got (an ASHA search's rungs, trials
against ``max_trials``) and how much each hyperparameter matters to the searcher metric.

Both are read from the database (the searcher's stored snapshot, the trials' rows), so they
answer alike for live and ended experiments and never touch a live searcher. Importance is
computed outside the database session, in a worker thread.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from assay import rest
from assay.config import ExperimentConfig, GridConfig, grid_points, load_experiment_config
from assay.db import Session, experiments, trials
from assay.master._importance import ImportanceAnswer, importances
from assay.master._orchestrator import Orchestrator
from assay.protocol import TERMINAL_TRIAL_STATES, TrialState
from assay.searcher import BracketCount, describe_brackets, halving_brackets, make_searcher

HALVING_SEARCHERS = frozenset({"async_halving", "adaptive_asha", "hyperband"})
"""The searchers whose methods are made of halving brackets (hyperband's only when
code-driven; its searcher-driven brackets keep no rungs to count and show none)."""


@dataclass(frozen=True)
class _Finished:
    config: ExperimentConfig
    results: list[tuple[int, dict[str, Any], float]]


_MEMO_SIZE = 64
"""Importance answers remembered, for the pages open on experiments whose trials have not
changed since they last asked."""


class Analysis:
    def __init__(self, core: Orchestrator) -> None:
        self.core = core
        self._memo: dict[tuple[Any, ...], ImportanceAnswer] = {}

    async def searcher_progress(self, experiment_id: int) -> rest.SearcherProgress:
        def read(session: Session) -> rest.SearcherProgress:
            exp = experiments.require(session, experiment_id)
            config = load_experiment_config(exp.config, stored=True)
            counts = trials.counts(session, [exp.id])[exp.id]
            state = exp.searcher_state or {}
            return rest.SearcherProgress(
                experiment_id=exp.id,
                searcher=config.searcher.name,
                unit=config.searcher.plan().unit,
                progress=exp.progress,
                max_trials=_max_trials(config),
                trials_created=sum(counts.values()),
                trials_completed=counts.get(TrialState.COMPLETED, 0),
                trials_ended=sum(n for s, n in counts.items() if s in TERMINAL_TRIAL_STATES),
                brackets=_brackets(config, exp.seed, state.get("method")),
            )

        return await self.core.read(read)

    async def hparam_importance(
        self, experiment_id: int, evaluator: rest.ImportanceEvaluator | None
    ) -> rest.HparamImportance:
        def read(session: Session) -> _Finished:
            exp = experiments.require(session, experiment_id)
            config = load_experiment_config(exp.config, stored=True)
            return _Finished(config, trials.finished_results(session, experiment_id))

        found = await self.core.read(read)
        sc = found.config.searcher
        # A finished trial's row no longer changes: the same trials give the same answer.
        ids = tuple(i for i, _, _ in found.results)
        key = (experiment_id, evaluator, len(ids), hash(ids))
        answer = self._memo.get(key)
        if answer is None:
            answer = await asyncio.to_thread(
                importances,
                dict(found.config.hyperparameters),
                [(hparams, value) for _, hparams, value in found.results],
                evaluator=evaluator,
                smaller_is_better=sc.smaller_is_better,
            )
            while len(self._memo) >= _MEMO_SIZE:
                self._memo.pop(next(iter(self._memo)))
            self._memo[key] = answer
        return rest.HparamImportance(
            experiment_id=experiment_id,
            evaluator=answer.evaluator,
            metric=getattr(sc, "metric", None),
            trials=answer.trials,
            importances=[
                rest.HparamImportanceItem(name=name, importance=value)
                for name, value in answer.importances
            ],
            message=answer.message,
        )


def _max_trials(config: ExperimentConfig) -> int | None:
    sc = config.searcher
    if isinstance(sc, GridConfig):
        return grid_points(dict(config.hyperparameters))
    planned = getattr(sc, "max_trials", None)
    return planned if isinstance(planned, int) else None


def _brackets(config: ExperimentConfig, seed: int, method_state: Any) -> list[rest.Bracket]:
    sc = config.searcher
    if sc.name not in HALVING_SEARCHERS:
        # A custom searcher's snapshot is its own; nothing in it is ours to read.
        return []
    counted = halving_brackets(method_state)
    # Each bracket's planned trials, from a searcher built afresh (its plan depends on the
    # config alone), matched to the counted brackets when they line up.
    planned = describe_brackets(make_searcher(config, seed).method)
    plan: list[int | None] = [b.max_trials for b in planned]
    if len(plan) != len(counted):
        plan = [None] * len(counted)
    return [_bracket(b, n, sc.smaller_is_better) for b, n in zip(counted, plan, strict=True)]


def _bracket(
    counted: BracketCount, max_trials: int | None, smaller_is_better: bool
) -> rest.Bracket:
    def shown(best: float | None) -> float | None:
        # Methods see "smaller is better"; the page shows the metric as reported.
        if best is None:
            return None
        return best if smaller_is_better else -best

    return rest.Bracket(
        rungs=[
            rest.Rung(
                length=r.length,
                reached=r.reached,
                training=r.training,
                promoted=r.promoted,
                best=shown(r.best),
            )
            for r in counted.rungs
        ],
        trials=counted.trials,
        max_trials=max_trials,
    )
