"""Which search method each searcher config builds: one entry per config class.

A searcher is its config class (in ``assay.config``, which also says how long it plans trials
to train: ``plan()``), its method module here, and one entry in :data:`_ENTRIES`. The factory,
the preview and the master build searchers through this table and read lengths from the
config's plan, so none of them lists searchers itself.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

from assay.config import (
    SEARCHER_CONFIGS,
    AdaptiveASHAConfig,
    AdaptiveConfig,
    AdaptiveSimpleConfig,
    AnnealConfig,
    AsyncHalvingConfig,
    BatchConfig,
    ConfigModel,
    CustomConfig,
    EvolutionConfig,
    GridConfig,
    HyperbandConfig,
    OptunaConfig,
    PBTConfig,
    RandomConfig,
    SamplerConfig,
    SearchPlan,
    SingleConfig,
    SyncHalvingConfig,
)
from assay.errors import InvalidConfig
from assay.searcher._adaptive import adaptive_asha
from assay.searcher._asha import AsyncHalving, AsyncHalvingStopping
from assay.searcher._base import SearchMethod
from assay.searcher._basic import BatchSearch, GridSearch, RandomSearch, SingleSearch
from assay.searcher._evolve import AnnealSource, EvolutionSource
from assay.searcher._hyperband import hyperband
from assay.searcher._pbt import PBT
from assay.searcher._source import ParamSource


@dataclass(frozen=True)
class BuildInputs:
    """What every builder is given besides its config section."""

    space: dict[str, Any]
    """The experiment's parsed hyperparameters."""
    seed: int
    """The experiment seed."""
    rng: random.Random
    """Seeded from ``seed``; the method's only source of randomness."""
    plan: SearchPlan
    """The config's :meth:`plan`."""
    custom_method: SearchMethod | None
    """The master's subprocess runner for ``custom`` searchers, when it gave one."""

    def sampler(self, cfg: SamplerConfig | None) -> ParamSource | None:
        """The source of a ``sampler:`` section (None: the method draws at random itself)."""
        if cfg is None:
            return None
        from assay.searcher._optuna import OptunaSource  # Optuna, loaded when first needed

        seed = self.seed if cfg.seed is None else int(cfg.seed)
        return OptunaSource(self.space, sampler=cfg.name, seed=seed, options=dict(cfg.options))

    def length(self, name: str) -> int:
        """The planned length, which searchers that plan rungs cannot do without."""
        if self.plan.length is None:
            raise InvalidConfig(
                f"searcher {name} needs searcher.max_length, or searcher.time_metric with "
                "searcher.max_time, to plan its rungs"
            )
        return self.plan.length


def _single(sc: SingleConfig, given: BuildInputs) -> SearchMethod:
    return SingleSearch(
        given.space,
        max_length=given.plan.length,
        rng=given.rng,
        source_checkpoint=sc.source_checkpoint_uuid,
    )


def _random(sc: RandomConfig, given: BuildInputs) -> SearchMethod:
    return RandomSearch(
        given.space,
        max_trials=sc.max_trials,
        max_length=given.plan.length,
        max_concurrent=sc.max_concurrent_trials,
        rng=given.rng,
        source_checkpoint=sc.source_checkpoint_uuid,
        source=given.sampler(sc.sampler),
    )


def _grid(sc: GridConfig, given: BuildInputs) -> SearchMethod:
    return GridSearch(
        given.space,
        max_trials=sc.max_trials,
        max_length=given.plan.length,
        max_concurrent=sc.max_concurrent_trials,
        rng=given.rng,
        source_checkpoint=sc.source_checkpoint_uuid,
    )


def _optuna(sc: OptunaConfig, given: BuildInputs) -> SearchMethod:
    # A random search whose hyperparameters come from the sampler of the same name.
    from assay.searcher._optuna import OptunaSource  # Optuna, loaded when first needed

    model = OptunaSource(
        given.space,
        sampler=sc.name,
        seed=given.seed,
        options=dict(sc.sampler_options),
        n_startup_trials=sc.n_startup_trials,
    )
    plan = given.plan
    return RandomSearch(
        given.space,
        max_trials=sc.max_trials,
        max_length=None if plan.code_driven else plan.length,
        max_concurrent=sc.max_concurrent_trials,
        rng=given.rng,
        source_checkpoint=sc.source_checkpoint_uuid,
        source=model,
    )


def _anneal(sc: AnnealConfig, given: BuildInputs) -> SearchMethod:
    return RandomSearch(
        given.space,
        max_trials=sc.max_trials,
        max_length=given.plan.length,
        max_concurrent=sc.max_concurrent_trials,
        rng=given.rng,
        source_checkpoint=sc.source_checkpoint_uuid,
        source=AnnealSource(given.space, given.rng),
    )


def _evolution(sc: EvolutionConfig, given: BuildInputs) -> SearchMethod:
    return RandomSearch(
        given.space,
        max_trials=sc.max_trials,
        max_length=given.plan.length,
        max_concurrent=sc.max_concurrent_trials,
        rng=given.rng,
        source_checkpoint=sc.source_checkpoint_uuid,
        source=EvolutionSource(given.space, given.rng, population_size=sc.population_size),
    )


def _batch(sc: BatchConfig, given: BuildInputs) -> SearchMethod:
    return BatchSearch(
        given.space,
        list(sc.points),
        max_trials=sc.max_trials,
        max_length=given.plan.length,
        max_concurrent=sc.max_concurrent_trials,
        rng=given.rng,
        source_checkpoint=sc.source_checkpoint_uuid,
    )


def _async_halving(sc: AsyncHalvingConfig, given: BuildInputs) -> SearchMethod:
    code_driven = given.plan.code_driven
    source = given.sampler(sc.sampler)
    common: dict[str, Any] = {
        "max_length": given.length(sc.name),
        "num_rungs": sc.num_rungs,
        "divisor": sc.divisor,
        "max_trials": sc.max_trials,
        "max_concurrent": sc.max_concurrent_trials,
        "rng": given.rng,
        "source": source,
        "source_checkpoint": sc.source_checkpoint_uuid,
    }
    if sc.stop_once or code_driven:
        return AsyncHalvingStopping(given.space, code_driven=code_driven, **common)
    return AsyncHalving(given.space, **common)


def _adaptive_asha(sc: AdaptiveASHAConfig, given: BuildInputs) -> SearchMethod:
    source = given.sampler(sc.sampler)
    return adaptive_asha(
        given.space,
        max_length=given.length(sc.name),
        max_trials=sc.max_trials,
        rng=given.rng,
        mode=sc.mode,
        divisor=sc.divisor,
        max_rungs=sc.max_rungs,
        bracket_rungs=list(sc.bracket_rungs) or None,
        max_concurrent=sc.max_concurrent_trials,
        stop_once=sc.stop_once,
        code_driven=given.plan.code_driven,
        source=source,
        source_checkpoint=sc.source_checkpoint_uuid,
    )


def _hyperband(sc: HyperbandConfig, given: BuildInputs) -> SearchMethod:
    source = given.sampler(sc.sampler)
    return hyperband(
        given.space,
        max_length=given.length(sc.name),
        rng=given.rng,
        divisor=sc.divisor,
        max_trials=sc.max_trials,
        max_concurrent=sc.max_concurrent_trials,
        code_driven=given.plan.code_driven,
        source=source,
        source_checkpoint=sc.source_checkpoint_uuid,
    )


def _pbt(sc: PBTConfig, given: BuildInputs) -> SearchMethod:
    return PBT(
        given.space,
        population_size=sc.population_size,
        num_rounds=sc.num_rounds,
        length_per_round=sc.length_per_round.value,
        truncate_fraction=sc.replace_function.truncate_fraction,
        resample_probability=sc.explore_function.resample_probability,
        perturb_factor=sc.explore_function.perturb_factor,
        rng=given.rng,
        source_checkpoint=sc.source_checkpoint_uuid,
    )


def _custom(sc: CustomConfig, given: BuildInputs) -> SearchMethod:
    if given.custom_method is None:
        raise InvalidConfig(
            f"a custom searcher cannot be previewed or built from the config alone: its "
            f"behaviour is the code of {sc.class_ or 'its class'}, which only runs in the "
            "master, from the experiment's context directory"
        )
    return given.custom_method


def _end_of_life(
    sc: SyncHalvingConfig | AdaptiveConfig | AdaptiveSimpleConfig, given: BuildInputs
) -> NoReturn:
    raise InvalidConfig(
        f"searcher {sc.name} reached end of life in Determined and is not supported; use "
        "adaptive_asha (or async_halving) instead"
    )


REGISTRY: Mapping[type[ConfigModel], Callable[[Any, BuildInputs], SearchMethod]] = {
    SingleConfig: _single,
    RandomConfig: _random,
    GridConfig: _grid,
    AsyncHalvingConfig: _async_halving,
    AdaptiveASHAConfig: _adaptive_asha,
    HyperbandConfig: _hyperband,
    OptunaConfig: _optuna,
    PBTConfig: _pbt,
    AnnealConfig: _anneal,
    EvolutionConfig: _evolution,
    BatchConfig: _batch,
    CustomConfig: _custom,
    SyncHalvingConfig: _end_of_life,
    AdaptiveConfig: _end_of_life,
    AdaptiveSimpleConfig: _end_of_life,
}
"""The builder of every class of ``assay.config.SEARCHER_CONFIGS``."""


def build_method(sc: ConfigModel, given: BuildInputs) -> SearchMethod:
    """The method ``sc`` configures (its registry builder)."""
    build = REGISTRY.get(type(sc))
    if build is None:
        known = ", ".join(c.__name__ for c in SEARCHER_CONFIGS)
        raise InvalidConfig(f"no searcher is registered for {type(sc).__name__}; known: {known}")
    return build(sc, given)
