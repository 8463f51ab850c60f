"""The Experiment page's analyses: how far the search has got (an ASHA search's rungs, trials
against ``max_trials``) and how much each hyperparameter matters to the searcher metric.

Both are read from the database (the searcher's stored snapshot and the events it handled
since, the trials' rows), so they answer alike for live and ended experiments and never touch a
live searcher. The master writes a searcher's snapshot only now and then (and when its
experiment ends), so a live search's rungs are its snapshot with those events replayed, as a
master restart rebuilds it. Replays and importances are computed outside the database session,
in a worker thread, and remembered.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from assay import rest
from assay.config import (
    BatchConfig,
    ExperimentConfig,
    GridConfig,
    grid_points,
    load_experiment_config,
)
from assay.db import Session, experiments, searcher_events, trials
from assay.master.kernel import Orchestrator
from assay.master.reads._importance import ImportanceAnswer, importances
from assay.protocol import TERMINAL_TRIAL_STATES, TrialState
from assay.searcher import BracketCount, describe_brackets, halving_brackets, make_searcher

HALVING_SEARCHERS = frozenset({"async_halving", "adaptive_asha", "hyperband"})
"""The searchers whose methods are made of halving brackets (hyperband's only when
code-driven; its searcher-driven brackets keep no rungs to count and show none)."""


@dataclass(frozen=True)
class _Progress:
    answer: rest.SearcherProgress
    """Everything but the brackets."""
    config: ExperimentConfig
    seed: int
    snapshot: dict[str, Any] | None
    events: list[dict[str, Any]]
    """The events the snapshot does not include (read only for the halving searchers)."""
    seq: int
    """The searcher's last event: the brackets are known again while it stays the same."""


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
        self._brackets: dict[tuple[int, int], list[rest.Bracket]] = {}

    async def searcher_progress(self, experiment_id: int) -> rest.SearcherProgress:
        def read(session: Session) -> _Progress:
            exp = experiments.require(session, experiment_id)
            config = load_experiment_config(exp.config, stored=True)
            counts = trials.counts(session, [exp.id])[exp.id]
            halving = config.searcher.name in HALVING_SEARCHERS
            answer = rest.SearcherProgress(
                experiment_id=exp.id,
                searcher=config.searcher.name,
                unit=config.searcher.plan().unit,
                progress=exp.progress,
                max_trials=_max_trials(config),
                trials_created=sum(counts.values()),
                trials_completed=counts.get(TrialState.COMPLETED, 0),
                trials_ended=sum(n for s, n in counts.items() if s in TERMINAL_TRIAL_STATES),
                brackets=[],
            )
            pending = halving and searcher_events.pending(exp) > 0
            events = searcher_events.after_snapshot(exp) if pending else []
            stored = searcher_events.snapshot(exp) if halving else None
            return _Progress(answer, config, exp.seed, stored, events, exp.searcher_seq)

        found = await self.core.read(read)
        if found.config.searcher.name not in HALVING_SEARCHERS:
            return found.answer
        key = (experiment_id, found.seq)
        brackets = self._brackets.get(key)
        if brackets is None:
            brackets = await asyncio.to_thread(
                _current_brackets, found.config, found.seed, found.snapshot, found.events
            )
            while len(self._brackets) >= _MEMO_SIZE:
                self._brackets.pop(next(iter(self._brackets)))
            self._brackets[key] = brackets
        return found.answer.model_copy(update={"brackets": brackets})

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
        points = grid_points(dict(config.hyperparameters))
        return points if sc.max_trials is None else min(points, sc.max_trials)
    if isinstance(sc, BatchConfig):
        return len(sc.points) if sc.max_trials is None else min(len(sc.points), sc.max_trials)
    planned = getattr(sc, "max_trials", None)
    return planned if isinstance(planned, int) else None


def _current_brackets(
    config: ExperimentConfig,
    seed: int,
    snapshot: dict[str, Any] | None,
    events: list[dict[str, Any]],
) -> list[rest.Bracket]:
    """The brackets of a halving search as its searcher holds them now: its stored snapshot
    with the events handled since replayed (search methods are pure, so this is the live
    searcher's state, built apart from it)."""
    if not events:
        return _brackets(config, seed, (snapshot or {}).get("method"))
    searcher = make_searcher(config, seed)
    if snapshot is not None:
        searcher.restore(snapshot)
    searcher.replay(events)
    return _brackets(config, seed, searcher.snapshot()["method"])


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
