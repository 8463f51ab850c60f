"""Hyperparameter importance with Optuna's evaluators, over an experiment's finished trials.

Each searched hyperparameter becomes an Optuna distribution: ``int`` an integer range,
``double`` a float range, ``log`` a log-scaled float range over ``base**minval`` to
``base**maxval``, ``categorical`` and ``choice`` categoricals over their options' indices (so
any JSON value can be an option), ``normal`` and ``lognormal`` a float range (log-scaled for
``lognormal``) over the values the trials drew. Constants are not searched and are left out, as
are the hyperparameters nested inside a ``choice``'s options (they exist in some trials only).
A trial's value that does not fit its hyperparameter's definition leaves that hyperparameter
out of the answer, as Optuna does with a parameter some trials lack.

Optuna (and scikit-learn, which fANOVA needs) are imported here, when an importance is asked
for, so the master starts without them.
"""

from __future__ import annotations

import importlib.util
import json
import math
import random
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assay import rest
from assay.config import (
    CategoricalHP,
    ChoiceHP,
    DoubleHP,
    IntHP,
    LogHP,
    LognormalHP,
    NormalHP,
    flatten,
    value_range,
)
from assay.errors import InvalidRequest

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution
    from optuna.importance import BaseImportanceEvaluator

MIN_TRIALS = 2
"""Fewer finished trials than this explain nothing."""

MAX_TRIALS = 1000
"""Past this many finished trials, a fixed sample of them is used: Optuna's fANOVA is written
in Python and its time grows faster than the trials (minutes at 2,000 with its defaults), and
even PED-ANOVA spends seconds building a study of tens of thousands."""

FANOVA_TREES = 16
FANOVA_DEPTH = 8
"""A smaller forest than Optuna's default (64 trees, depth 64): it ranked the hyperparameters
of 300 trials alike in an eighth of the time (2 s instead of 16 s on two busy cores)."""

Evaluator = rest.ImportanceEvaluator


@dataclass(frozen=True)
class ImportanceAnswer:
    evaluator: rest.ImportanceEvaluator
    trials: int
    importances: list[tuple[str, float]]
    """By hyperparameter, most important first."""
    message: str | None = None


@dataclass(frozen=True)
class Axis:
    """One searched hyperparameter as Optuna sees it."""

    distribution: BaseDistribution
    encode: Callable[[Any], Any]
    """A trial's value as the distribution's value, or None when it does not fit."""


def _key(value: Any) -> str:
    # 1, 1.0 and true are different options in a config; JSON tells them apart.
    return json.dumps(value, sort_keys=True)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _within(low: float, high: float) -> Callable[[Any], float | None]:
    def encode(value: Any) -> float | None:
        number = _number(value)
        if number is None or not low <= number <= high:
            return None
        return number

    return encode


def _integer(low: int, high: int) -> Callable[[Any], int | None]:
    def encode(value: Any) -> int | None:
        number = _number(value)
        if number is None or not number.is_integer() or not low <= number <= high:
            return None
        return int(number)

    return encode


def _indexed(options: list[Any]) -> Callable[[Any], int | None]:
    keys = {_key(o): i for i, o in reversed(list(enumerate(options)))}
    return lambda value: keys.get(_key(value))


def _choice(hp: ChoiceHP) -> Callable[[Any], int | None]:
    """The index of the chosen option: a constant option by its value, a map option (whose
    hyperparameters were drawn) by its keys when no other map option has the same keys."""
    constants = _indexed([o if not isinstance(o, dict) else None for o in hp.options])
    shapes: dict[frozenset[str], list[int]] = {}
    for i, option in enumerate(hp.options):
        if isinstance(option, dict):
            shapes.setdefault(frozenset(option), []).append(i)

    def encode(value: Any) -> int | None:
        if isinstance(value, dict):
            found = shapes.get(frozenset(value), [])
            return found[0] if len(found) == 1 else None
        index = constants(value)
        return None if index is None or isinstance(hp.options[index], dict) else index

    return encode


def axes(space: dict[str, Any], observed: dict[str, list[Any]]) -> dict[str, Axis]:
    """The searched hyperparameters of ``space`` by dotted name. ``observed`` holds the values
    trials drew, by name, for the families whose range is not in the definition."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    found: dict[str, Axis] = {}
    for name, hp in flatten(space).items():
        if isinstance(hp, IntHP):
            found[name] = Axis(
                IntDistribution(hp.minval, hp.maxval), _integer(hp.minval, hp.maxval)
            )
        elif isinstance(hp, DoubleHP):
            found[name] = Axis(
                FloatDistribution(hp.minval, hp.maxval), _within(hp.minval, hp.maxval)
            )
        elif isinstance(hp, LogHP):
            low, high = value_range(hp)
            found[name] = Axis(FloatDistribution(low, high, log=True), _within(low, high))
        elif isinstance(hp, NormalHP | LognormalHP):
            log = isinstance(hp, LognormalHP)
            numbers = [n for v in observed.get(name, []) if (n := _number(v)) is not None]
            numbers = [n for n in numbers if n > 0] if log else numbers
            if numbers and min(numbers) < max(numbers):
                low, high = min(numbers), max(numbers)
                found[name] = Axis(FloatDistribution(low, high, log=log), _within(low, high))
        elif isinstance(hp, CategoricalHP):
            choices = list(range(len(hp.vals)))
            found[name] = Axis(CategoricalDistribution(choices), _indexed(list(hp.vals)))
        elif isinstance(hp, ChoiceHP):
            choices = list(range(len(hp.options)))
            found[name] = Axis(CategoricalDistribution(choices), _choice(hp))
    return found


def value_at(hparams: dict[str, Any], name: str) -> Any:
    """The value at a dotted name of a trial's (nested) hyperparameters; None when absent."""
    node: Any = hparams
    for part in name.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _evaluator(wanted: Evaluator | None) -> tuple[Evaluator, BaseImportanceEvaluator]:
    from optuna.importance import (
        FanovaImportanceEvaluator,
        MeanDecreaseImpurityImportanceEvaluator,
        PedAnovaImportanceEvaluator,
    )

    # Optuna's own default: no scikit-learn, and fast at tens of thousands of trials.
    wanted = Evaluator.PED_ANOVA if wanted is None else wanted
    if wanted is Evaluator.PED_ANOVA:
        return wanted, PedAnovaImportanceEvaluator()
    if importlib.util.find_spec("sklearn") is None:
        raise InvalidRequest(
            f"evaluator={wanted.value} needs the Python package scikit-learn in the master's "
            "environment (pip install scikit-learn); or ask for evaluator=ped_anova"
        )
    if wanted is Evaluator.FANOVA:
        return wanted, FanovaImportanceEvaluator(
            n_trees=FANOVA_TREES, max_depth=FANOVA_DEPTH, seed=0
        )
    return wanted, MeanDecreaseImpurityImportanceEvaluator(seed=0)


def importances(
    space: dict[str, Any],
    results: list[tuple[dict[str, Any], float]],
    *,
    evaluator: Evaluator | None = None,
    smaller_is_better: bool = True,
) -> ImportanceAnswer:
    """How much each searched hyperparameter of ``space`` explains the metric over
    ``results``: each finished trial's hyperparameters and searcher metric."""
    chosen, impl = _evaluator(evaluator)
    finite = [(h, v) for h, v in results if math.isfinite(v)]
    count = len(finite)
    if count < MIN_TRIALS:
        return ImportanceAnswer(
            chosen,
            count,
            [],
            f"importance needs at least {MIN_TRIALS} finished trials (COMPLETED, with a "
            f"searcher metric); this experiment has {count}",
        )
    note = None
    if count > MAX_TRIALS:
        finite = random.Random(0).sample(finite, MAX_TRIALS)
        note = f"computed on a fixed sample of {MAX_TRIALS} of the {count} finished trials"
    names = list(flatten(space))
    observed = {n: [value_at(h, n) for h, _ in finite] for n in names}
    found = axes(space, observed)
    if not found:
        return ImportanceAnswer(
            chosen, count, [], "no hyperparameter is searched: all are constants"
        )
    if len({v for _, v in finite}) == 1:
        return ImportanceAnswer(
            chosen,
            count,
            [],
            "every finished trial has the same metric: no hyperparameter explains a difference",
        )
    scores = _evaluate(found, finite, impl, smaller_is_better)
    if not scores:
        return ImportanceAnswer(
            chosen,
            count,
            [],
            "no searched hyperparameter took more than one value in every finished trial",
        )
    return ImportanceAnswer(chosen, count, scores, note)


def _evaluate(
    found: dict[str, Axis],
    finite: list[tuple[dict[str, Any], float]],
    impl: BaseImportanceEvaluator,
    smaller_is_better: bool,
) -> list[tuple[str, float]]:
    import optuna
    from optuna.trial import TrialState, create_trial

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="minimize" if smaller_is_better else "maximize")
    frozen = []
    for hparams, value in finite:
        params: dict[str, Any] = {}
        dists: dict[str, BaseDistribution] = {}
        for name, axis in found.items():
            encoded = axis.encode(value_at(hparams, name))
            if encoded is not None:
                params[name] = encoded
                dists[name] = axis.distribution
        frozen.append(
            create_trial(state=TrialState.COMPLETE, params=params, distributions=dists, value=value)
        )
    study.add_trials(frozen)
    with warnings.catch_warnings():
        # Optuna warns that its evaluators are experimental; nobody reads a master's stderr.
        warnings.simplefilter("ignore")
        try:
            raw = optuna.importance.get_param_importances(study, evaluator=impl)
        except (RuntimeError, ValueError):
            # Optuna refuses when no parameter is in every trial's search space.
            return []
    scores = [(name, float(v) if math.isfinite(float(v)) else 0.0) for name, v in raw.items()]
    return sorted(scores, key=lambda item: (-item[1], item[0]))
