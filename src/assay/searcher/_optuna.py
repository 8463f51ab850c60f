"""Model-based hyperparameter suggestions through Optuna's samplers.

Optuna does the modelling (TPE, CMA-ES, QMC, GP, NSGA-II); this module maps assay's
hyperparameter space onto Optuna distributions and drives an in-memory study with ask/tell.
A ``normal`` or ``lognormal`` is searched as its quantile, uniform on ``(0, 1)``, mapped through
the inverse normal CDF, so a sampler models it with the right prior; ``q`` is applied to what
the sampler draws. A ``choice`` is a categorical over its option indices, and the nested
hyperparameters of option ``i`` of ``model`` are parameters of their own (``model.i.k``), asked
for only when that option is chosen (Optuna's conditional, define-by-run spaces).

Snapshots keep the study's history (each asked trial's parameters, state, value and the
system attributes samplers store on trials and on the study; see ``_optuna_history``) rather
than pickling Optuna objects, and a restore rebuilds the study by replaying it. Before every
ask and tell the sampler's random states are reset from ``seed + number of asks so far`` (or,
for a sampler whose states cannot be found, it is rebuilt with that seed), so what it draws is a
function of the history alone and a restored source suggests exactly what the original would have.
"""

from __future__ import annotations

import importlib.util
import logging
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeGuard

import numpy as np
import optuna
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.samplers._lazy_random_state import LazyRandomState
from optuna.storages import InMemoryStorage
from optuna.trial import TrialState, create_trial

from assay.config import (
    SAMPLER_NAMES,
    CategoricalHP,
    ChoiceHP,
    ConstHP,
    DoubleHP,
    IntHP,
    LogHP,
    LognormalHP,
    NormalHP,
    SamplerName,
    flatten,
    quantize,
    value_range,
)
from assay.errors import InvalidConfig
from assay.searcher._optuna_history import TrialSlimmer, decode, encode
from assay.searcher._source import Outcome
from assay.searcher._space import draw, leaves, normal_from_unit

_OUTCOME_STATE = {
    Outcome.COMPLETE: TrialState.COMPLETE,
    Outcome.PRUNED: TrialState.PRUNED,
    Outcome.FAIL: TrialState.FAIL,
}

_JSON_SCALARS = (str, int, float, bool, type(None))


@dataclass(frozen=True)
class FlatParam:
    """One searchable hyperparameter under its flattened (dotted) name."""

    name: str
    distribution: BaseDistribution
    choices: tuple[Any, ...] | None = None
    """For a categorical whose values Optuna cannot hold (lists, maps, values equal to each
    other such as ``1`` and ``true``): the values, which Optuna then sees as indices."""
    hp: Any = None
    """The definition, where what Optuna draws is not yet the value (``q``, the normal
    families, a ``choice``'s index)."""
    conditional: bool = False
    """Drawn only when an enclosing ``choice`` picks its option."""

    def from_optuna(self, value: Any) -> Any:
        hp = self.hp
        if self.choices is not None:
            return self.choices[int(value)]
        if isinstance(hp, NormalHP | LognormalHP):
            return normal_from_unit(hp, float(value))
        if isinstance(hp, DoubleHP | LogHP) and hp.q is not None:
            low, high = value_range(hp)
            return quantize(float(value), hp.q, low, high)
        if isinstance(hp, ChoiceHP):
            return int(value)
        return value

    def suggest(self, trial: optuna.trial.BaseTrial) -> Any:
        """Ask ``trial`` for this parameter (a conditional one is not among the distributions
        asked for up front)."""
        dist = self.distribution
        if isinstance(dist, FloatDistribution):
            raw: Any = trial.suggest_float(
                self.name, dist.low, dist.high, log=dist.log, step=dist.step
            )
        elif isinstance(dist, IntDistribution):
            raw = trial.suggest_int(self.name, dist.low, dist.high, log=dist.log, step=dist.step)
        elif isinstance(dist, CategoricalDistribution):
            raw = trial.suggest_categorical(self.name, dist.choices)
        else:
            raise TypeError(f"not an assay distribution: {dist!r}")
        return self.from_optuna(raw)


def _categorical_needs_indices(vals: list[Any]) -> bool:
    if not all(isinstance(v, _JSON_SCALARS) for v in vals):
        return True
    # Optuna finds a choice with ``==``, under which 1, 1.0 and True are one value.
    return any(vals[i] == vals[j] for i in range(len(vals)) for j in range(i + 1, len(vals)))


_UNIT = FloatDistribution(1e-6, 1 - 1e-6)
"""The quantile a normal-family hyperparameter is searched as: within 4.75 sigma of ``mu``, so
a sampler that favours the ends of a range (GP) does not propose values 7 sigma out."""


def flat_params(space: dict[str, Any]) -> tuple[dict[str, FlatParam], dict[str, Any]]:
    """Map a hyperparameter space onto Optuna distributions.

    Returns the searchable parameters by genome path (the flattened name; see ``_space``) and
    the constants outside any ``choice`` (which are fixed values, not part of Optuna's space).
    ``int`` is inclusive at both ends as in assay; ``log`` with base ``b`` over exponents
    ``[lo, hi]`` is log-uniform over ``[b**lo, b**hi]``, whatever the base, which is exactly
    Optuna's ``log=True``.
    """
    params: dict[str, FlatParam] = {}
    for name, hp, conditional in leaves(space):
        params[name] = _param(name, hp, conditional)
    constants = {n: hp.val for n, hp in flatten(space).items() if isinstance(hp, ConstHP)}
    return params, constants


def _param(name: str, hp: Any, conditional: bool) -> FlatParam:
    if isinstance(hp, IntHP):
        return FlatParam(name, IntDistribution(hp.minval, hp.maxval), conditional=conditional)
    if isinstance(hp, DoubleHP):
        dist = FloatDistribution(hp.minval, hp.maxval)
        return FlatParam(name, dist, hp=hp, conditional=conditional)
    if isinstance(hp, LogHP):
        low, high = value_range(hp)
        dist = FloatDistribution(low, high, log=True)
        return FlatParam(name, dist, hp=hp, conditional=conditional)
    if isinstance(hp, NormalHP | LognormalHP):
        return FlatParam(name, _UNIT, hp=hp, conditional=conditional)
    if isinstance(hp, ChoiceHP):
        indices = CategoricalDistribution(list(range(len(hp.options))))
        return FlatParam(name, indices, hp=hp, conditional=conditional)
    if isinstance(hp, CategoricalHP):
        vals = list(hp.vals)
        if _categorical_needs_indices(vals):
            indices = CategoricalDistribution(list(range(len(vals))))
            return FlatParam(name, indices, tuple(vals), conditional=conditional)
        return FlatParam(name, CategoricalDistribution(vals), conditional=conditional)
    raise TypeError(f"not a hyperparameter definition at {name}: {hp!r}")


def distributions(space: dict[str, Any]) -> dict[str, BaseDistribution]:
    """The Optuna distributions of the searchable hyperparameters, by flattened name."""
    params, _ = flat_params(space)
    return {name: p.distribution for name, p in params.items()}


SamplerFactory = Callable[[int, int, dict[str, Any]], optuna.samplers.BaseSampler]
"""Builds a sampler from (the seed of this ask, the source's own seed, keyword options)."""


@dataclass(frozen=True)
class _Sampler:
    """How assay builds one of Optuna's samplers."""

    build: SamplerFactory
    package: str | None = None
    """The package it needs beyond Optuna, checked when the source is built so a missing one is
    a config error at submission rather than a crash mid-search."""
    counts_startup: bool = False
    """It takes ``n_startup_trials`` (random draws before the model is used)."""


def _random(seed: int, first_seed: int, kwargs: dict[str, Any]) -> optuna.samplers.BaseSampler:
    return optuna.samplers.RandomSampler(seed=seed, **kwargs)


def _tpe(seed: int, first_seed: int, kwargs: dict[str, Any]) -> optuna.samplers.BaseSampler:
    return optuna.samplers.TPESampler(seed=seed, **kwargs)


def _cmaes(seed: int, first_seed: int, kwargs: dict[str, Any]) -> optuna.samplers.BaseSampler:
    kwargs.setdefault("warn_independent_sampling", False)
    kwargs.setdefault("independent_sampler", optuna.samplers.RandomSampler(seed=seed))
    return optuna.samplers.CmaEsSampler(seed=seed, **kwargs)


def _qmc(seed: int, first_seed: int, kwargs: dict[str, Any]) -> optuna.samplers.BaseSampler:
    # QMC's sequence position lives in the study; its scramble seed must stay fixed across
    # asks or the low-discrepancy property is lost.
    kwargs.setdefault("warn_independent_sampling", False)
    kwargs.setdefault("warn_asynchronous_seeding", False)
    kwargs["independent_sampler"] = optuna.samplers.RandomSampler(seed=seed)
    return optuna.samplers.QMCSampler(seed=first_seed, **kwargs)


def _gp(seed: int, first_seed: int, kwargs: dict[str, Any]) -> optuna.samplers.BaseSampler:
    kwargs.setdefault("warn_independent_sampling", False)
    kwargs.setdefault("independent_sampler", optuna.samplers.RandomSampler(seed=seed))
    return optuna.samplers.GPSampler(seed=seed, **kwargs)


def _nsga2(seed: int, first_seed: int, kwargs: dict[str, Any]) -> optuna.samplers.BaseSampler:
    return optuna.samplers.NSGAIISampler(seed=seed, **kwargs)


_SAMPLERS: dict[SamplerName, _Sampler] = {
    "random": _Sampler(_random),
    "tpe": _Sampler(_tpe, counts_startup=True),
    "cmaes": _Sampler(_cmaes, package="cmaes", counts_startup=True),
    "qmc": _Sampler(_qmc, package="scipy"),
    "gp": _Sampler(_gp, package="torch", counts_startup=True),
    "nsga2": _Sampler(_nsga2),
}
"""Every name of ``assay.config.SAMPLER_NAMES``, and how to build it."""


def _is_sampler_name(name: str) -> TypeGuard[SamplerName]:
    return name in SAMPLER_NAMES


def check_sampler(name: str) -> _Sampler:
    """The sampler ``name``; :class:`InvalidConfig` when it is unknown or its package is not
    installed."""
    if not _is_sampler_name(name):
        raise InvalidConfig(
            f"unknown sampler {name!r}; expected one of: {', '.join(SAMPLER_NAMES)}"
        )
    sampler = _SAMPLERS[name]
    package = sampler.package
    if package is not None and importlib.util.find_spec(package) is None:
        raise InvalidConfig(
            f"the {name!r} sampler needs the Python package {package!r}, which is not "
            f"installed in the master's environment; install it (pip install {package}) "
            "or choose another sampler"
        )
    return sampler


def _reseed(sampler: Any, seed: int, *, depth: int = 0) -> int:
    """Reset every random state a sampler holds (its own and its inner samplers') from
    ``seed``, in place; returns how many it found (0: it must be rebuilt to be reseeded).

    Only RNG objects are touched, never integer seeds, so QMC's scramble seed stays fixed.
    """
    if depth > 3:
        return 0
    found = 0
    for index, (name, value) in enumerate(sorted(vars(sampler).items())):
        derived = (seed + 7919 * (index + 1) * (depth + 1)) % 2**32
        if isinstance(value, LazyRandomState):
            value.rng.seed(seed if name == "_rng" else derived)
            found += 1
        elif isinstance(value, np.random.RandomState):
            value.seed(derived)
            found += 1
        elif isinstance(value, optuna.samplers.BaseSampler):
            found += _reseed(value, derived, depth=depth + 1)
    return found


class OptunaSource:
    """A :class:`~assay.searcher.ParamSource` backed by one Optuna sampler.

    Values told to Optuna are the method's metrics, already "smaller is better".
    """

    def __init__(
        self,
        space: dict[str, Any],
        *,
        sampler: str,
        seed: int,
        options: dict[str, Any] | None = None,
        n_startup_trials: int | None = None,
    ) -> None:
        self.sampler = check_sampler(sampler)
        self.sampler_name = sampler
        self.space = space
        self.seed = seed
        self.options = dict(options or {})
        self.n_startup_trials = n_startup_trials
        self.params, self.constants = flat_params(space)
        # Asked for up front, so samplers that model the joint space (CMA-ES, GP) see it; the
        # nested hyperparameters of a choice's options are asked for when chosen.
        self.fixed = {name: p.distribution for name, p in self.params.items() if not p.conditional}
        self.numbers: dict[str, int] = {}
        """The trial numbers of the suggestions not yet finished, by request id."""
        self._sampler_key: int | None = None
        self._reseedable = False
        self._new_study()

    # -- ParamSource ---------------------------------------------------------------------------

    def suggest(self, request_id: str) -> dict[str, Any]:
        self._use_sampler()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trial = self.study.ask(self.fixed)
            values, _ = draw(self.space, None, lambda name, hp: self.params[name].suggest(trial))
        self.numbers[request_id] = trial.number
        return values

    def finish(self, request_id: str, outcome: Outcome, metric: float | None) -> None:
        number = self.numbers.pop(request_id, None)
        if number is None:
            return
        self._use_sampler()
        state = _OUTCOME_STATE[outcome]
        value = metric if state is TrialState.COMPLETE else None
        if state is TrialState.COMPLETE and value is None:
            state, outcome = TrialState.FAIL, Outcome.FAIL
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.study.tell(number, value, state=state)
        # get_trial hands back the stored trial itself, not a copy, so slimming it keeps the
        # saving; were it a copy, nothing would change but the saving.
        trial_id = self.storage.get_trial_id_from_study_id_trial_number(self.study_id, number)
        self._slimmer.slim(self.storage.get_trial(trial_id))

    def snapshot(self) -> dict[str, Any]:
        return {
            "trials": encode(self.study.get_trials(deepcopy=False)),
            "numbers": dict(self.numbers),
            "study_system_attrs": self.storage.get_study_system_attrs(self.study_id),
        }

    def restore(self, state: dict[str, Any]) -> None:
        self._new_study()
        for entry in decode(state):
            params = {
                name: self.params[name].distribution.to_external_repr(value)
                for name, value in entry.params.items()
            }
            dists = {name: self.params[name].distribution for name in params}
            frozen = create_trial(
                state=entry.state,
                params=params,
                distributions=dists,
                value=entry.value if entry.state is TrialState.COMPLETE else None,
                system_attrs=entry.system_attrs,
            )
            self.study.add_trial(frozen)
        for trial in self.study.get_trials(deepcopy=False):
            if trial.state.is_finished():
                self._slimmer.slim(trial)
        for key, value in state["study_system_attrs"].items():
            self.storage.set_study_system_attr(self.study_id, key, value)
        self.numbers = dict(state["numbers"])

    # -- internals -----------------------------------------------------------------------------

    def _new_study(self) -> None:
        # Optuna logs a line per finished trial at INFO; the master logs searcher events itself.
        optuna.logging.set_verbosity(logging.WARNING)
        self.storage = InMemoryStorage()
        self.study = optuna.create_study(storage=self.storage, direction="minimize")
        self.study_id = self.storage.get_study_id_from_name(self.study.study_name)
        self._slimmer = TrialSlimmer()
        self._sampler_key = None
        self._reseedable = False

    def _use_sampler(self) -> None:
        key = self.storage.get_n_trials(self.study_id)  # the asks so far
        if self._sampler_key == key:
            return
        self._sampler_key = key
        seed = (self.seed + key) % 2**32
        if self._reseedable and _reseed(self.study.sampler, seed) > 0:
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sampler = self._build_sampler(seed)
        # Reusing one sampler keeps its caches (TPE recomputes the intersection search space
        # over every trial when built afresh); that is only safe when its RNGs can be reset.
        self._reseedable = _reseed(sampler, seed) > 0
        self.study.sampler = sampler

    def _build_sampler(self, seed: int) -> optuna.samplers.BaseSampler:
        kwargs = dict(self.options)
        if self.n_startup_trials is not None and self.sampler.counts_startup:
            kwargs.setdefault("n_startup_trials", self.n_startup_trials)
        return self.sampler.build(seed, self.seed, kwargs)
