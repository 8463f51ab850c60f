"""Searcher sections: a union chosen by ``name``, plus samplers and early stopping.

Determined's searchers (single, random, grid, async_halving, adaptive_asha, custom, pbt, and the
end-of-life sync_halving, adaptive and adaptive_simple, accepted here and refused at submission)
and assay's additions (hyperband, and tpe, cmaes, qmc, gp, nsga2 backed by Optuna; NNI's anneal,
evolution and batch tuners).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, AliasChoices, BeforeValidator, ConfigDict, Field, Tag

from assay.config._base import ConfigModel, Problem, config_error, tagged
from assay.config._length import Length, PositiveLength, SearcherLength
from assay.config._limits import (
    DB_INT_MAX,
    MAX_DIVISOR,
    MAX_NAME,
    MAX_PATH,
    MAX_RUNGS,
    MAX_TRIALS,
    MAX_TRIALS_AT_ONCE,
    MAX_UUID,
    SEED_MAX,
)

# Counts and steps are compared with what the database stores, so they stay within its integers.
NonNegative = Annotated[int, Field(ge=0, le=DB_INT_MAX)]
AtLeastOne = Annotated[int, Field(ge=1, le=DB_INT_MAX)]
Divisor = Annotated[float, Field(gt=1, le=MAX_DIVISOR)]
Fraction = Annotated[float, Field(ge=0, le=1)]
Trials = Annotated[int, Field(ge=1, le=MAX_TRIALS)]
AtOnce = Annotated[int, Field(ge=0, le=MAX_TRIALS_AT_ONCE)]
"""``max_concurrent_trials``: 0 lets the searcher choose."""
Rungs = Annotated[int, Field(ge=1, le=MAX_RUNGS)]


def _a_name(value: str) -> str:
    # An empty name matches no metric a trial reports: the search would never get a result.
    if not value.strip():
        raise config_error("must name a metric the trials report (such as loss), got an empty name")
    return value


MetricName = Annotated[str, Field(max_length=MAX_NAME), AfterValidator(_a_name)]
"""The name of a metric the trials report: ``searcher.metric``, ``time_metric``."""

OptunaSearcherName = Literal["tpe", "cmaes", "qmc", "gp", "nsga2"]
"""The Optuna samplers that are also searchers of their own (:class:`OptunaConfig`)."""
SamplerName = Literal["random", OptunaSearcherName]
"""Every sampler a ``sampler:`` section may name: the one list of sampler names."""

SAMPLER_NAMES: tuple[SamplerName, ...] = get_args(SamplerName)
OPTUNA_SEARCHERS: tuple[OptunaSearcherName, ...] = get_args(OptunaSearcherName)


@dataclass(frozen=True)
class SearchPlan:
    """How long a searcher plans its trials to train, counted in what."""

    length: int | None
    """The length every trial is planned to reach (``max_length``, or ``max_time`` with a
    ``time_metric``). None when trials train as long as their code chooses, and for PBT, whose
    copies count their own training from the round they join in."""
    unit: str
    """What lengths count: ``batches``, ``records``, ``epochs`` or ``unitless``, the
    ``time_metric``'s name, or ``units`` when nothing says."""
    code_driven: bool
    """Trials train as long as their code chooses and report; the searcher only stops them."""
    longest: int | None
    """The longest any one trial may train (PBT: ``num_rounds * length_per_round``)."""


def _planned(
    max_length: Length | None, time_metric: str | None = None, max_time: int | None = None
) -> SearchPlan:
    # time_metric + max_time: code-driven with max_time as the length; else max_length; with
    # neither, trials train as long as their code chooses.
    if time_metric is not None:
        return SearchPlan(max_time, time_metric, code_driven=True, longest=max_time)
    if max_length is not None:
        return SearchPlan(
            max_length.value, max_length.unit.value, code_driven=False, longest=max_length.value
        )
    return SearchPlan(None, "units", code_driven=True, longest=None)


class SamplerConfig(ConfigModel):
    """How a searcher draws new hyperparameters (Optuna's samplers; ``random`` by default)."""

    name: SamplerName
    seed: Annotated[int, Field(ge=0, le=SEED_MAX)] | None = None
    options: dict[str, Any] = {}


def _sampler_shorthand(value: Any) -> Any:
    # ``sampler: tpe`` is ``sampler: {name: tpe}``.
    return {"name": value} if isinstance(value, str) else value


Sampler = Annotated[SamplerConfig, BeforeValidator(_sampler_shorthand)]
"""A ``sampler:`` section, or just the sampler's name."""


class MedianStopConfig(ConfigModel):
    """Stop a trial whose best result so far is worse than the median of other trials' running
    averages at the same step (NNI's Medianstop)."""

    name: Literal["medianstop"]
    start_step: NonNegative = 0
    min_trials: AtLeastOne = 3


class CurveFittingConfig(ConfigModel):
    """Stop a trial whose fitted learning curve predicts it will not beat ``threshold`` times the
    best so far (NNI's Curvefitting)."""

    name: Literal["curvefitting"]
    epoch_num: AtLeastOne
    start_step: NonNegative = 6
    threshold: Fraction = 0.95
    gap: AtLeastOne = 1


EarlyStoppingConfig = Annotated[
    Annotated[MedianStopConfig, Tag("<medianstop>")]
    | Annotated[CurveFittingConfig, Tag("<curvefitting>")],
    tagged(
        "name",
        {"medianstop": "<medianstop>", "curvefitting": "<curvefitting>"},
        "early stopping rule",
    ),
]


class _Searcher(ConfigModel):
    """What every searcher takes."""

    metric: MetricName
    smaller_is_better: bool = True
    source_trial_id: NonNegative | None = None
    source_checkpoint_uuid: Annotated[str, Field(max_length=MAX_UUID)] | None = None


class _EarlyStopping(_Searcher):
    early_stopping: EarlyStoppingConfig | None = None


class SingleConfig(_EarlyStopping):
    """One trial with the constant (or first) hyperparameters."""

    name: Literal["single"]
    max_length: SearcherLength | None = None

    def plan(self) -> SearchPlan:
        return _planned(self.max_length)


class RandomConfig(_EarlyStopping):
    """``max_trials`` trials with sampled hyperparameters."""

    name: Literal["random"]
    max_trials: Trials
    max_concurrent_trials: AtOnce = 16
    max_length: SearcherLength | None = None
    sampler: Sampler | None = None

    def plan(self) -> SearchPlan:
        return _planned(self.max_length)


class GridConfig(_Searcher):
    """One trial per point of the grid (every int/double/log hyperparameter needs ``count``),
    in order; with ``max_trials``, only that many of its first points (NNI's ``maxTrialNumber``
    with GridSearch)."""

    name: Literal["grid"]
    max_trials: Trials | None = None
    max_concurrent_trials: AtOnce = 16
    max_length: SearcherLength | None = None

    def plan(self) -> SearchPlan:
        return _planned(self.max_length)


class _TimeBound(_EarlyStopping):
    max_length: SearcherLength | None = None
    time_metric: MetricName | None = None
    max_time: NonNegative | None = None

    def plan(self) -> SearchPlan:
        return _planned(self.max_length, self.time_metric, self.max_time)


class AsyncHalvingConfig(_TimeBound):
    """Asynchronous successive halving over ``num_rungs`` rungs."""

    name: Literal["async_halving"]
    num_rungs: Rungs
    max_trials: Trials
    divisor: Divisor = 4.0
    max_concurrent_trials: AtOnce = 16
    stop_once: bool = False
    sampler: Sampler | None = None


class AdaptiveASHAConfig(_TimeBound):
    """Brackets of asynchronous successive halving (Determined's default tuner)."""

    name: Literal["adaptive_asha"]
    max_trials: Trials
    mode: Literal["standard", "aggressive", "conservative"] = "standard"
    divisor: Divisor = 4.0
    max_rungs: Rungs = 5
    bracket_rungs: Annotated[list[Rungs], Field(max_length=MAX_RUNGS)] = []
    max_concurrent_trials: AtOnce = 16
    stop_once: bool = False
    sampler: Sampler | None = None


class HyperbandConfig(_TimeBound):
    """Hyperband (NNI's and the paper's), with ``eta`` accepted for ``divisor``; with
    ``sampler: tpe`` it is BOHB (new configurations proposed by TPE from the results so far)."""

    name: Literal["hyperband"]
    divisor: Divisor = Field(default=3.0, validation_alias=AliasChoices("divisor", "eta"))
    max_trials: Trials | None = None
    max_concurrent_trials: AtOnce = 16
    sampler: Sampler | None = None

    @classmethod
    def _cross_checks(cls, data: dict[str, Any]) -> list[Problem]:
        if "divisor" in data and "eta" in data:
            return [(("eta",), "eta is another name for divisor; give one of them, not both")]
        return []

    @classmethod
    def _normalize(cls, data: dict[str, Any]) -> dict[str, Any]:
        if "divisor" in data and "eta" in data:
            return {k: v for k, v in data.items() if k != "eta"}  # reported by _cross_checks
        return data


class OptunaConfig(_TimeBound):
    """A model-based searcher backed by an Optuna sampler of the same name."""

    name: OptunaSearcherName
    max_trials: Trials
    max_concurrent_trials: AtOnce = 16
    n_startup_trials: Annotated[int, Field(ge=0, le=MAX_TRIALS)] = 10
    sampler_options: dict[str, Any] = {}


class AnnealConfig(_EarlyStopping):
    """NNI's Anneal tuner: random draws at first, then draws around one of the best results so
    far with a spread that shrinks as results come in."""

    name: Literal["anneal"]
    max_trials: Trials
    max_concurrent_trials: AtOnce = 16
    max_length: SearcherLength | None = None

    def plan(self) -> SearchPlan:
        return _planned(self.max_length)


class EvolutionConfig(_EarlyStopping):
    """NNI's Evolution tuner: a random population of ``population_size``, then each new trial
    is the better of two random members with one hyperparameter drawn afresh; the worse member
    leaves the population."""

    name: Literal["evolution"]
    population_size: Annotated[int, Field(ge=1, le=MAX_TRIALS)] = 32
    max_trials: Trials
    max_concurrent_trials: AtOnce = 16
    max_length: SearcherLength | None = None

    def plan(self) -> SearchPlan:
        return _planned(self.max_length)


class BatchConfig(_EarlyStopping):
    """NNI's BatchTuner: one trial per entry of ``points``, in order. A point gives the trial's
    hyperparameters as they are, over the values drawn from ``hyperparameters`` (usually
    constants), a nested map merged key by key. With ``max_trials``, only that many of the
    first points (NNI's ``maxTrialNumber``)."""

    name: Literal["batch"]
    points: Annotated[list[dict[str, Any]], Field(min_length=1, max_length=MAX_TRIALS)]
    max_trials: Trials | None = None
    max_concurrent_trials: AtOnce = 16
    max_length: SearcherLength | None = None

    def plan(self) -> SearchPlan:
        return _planned(self.max_length)


class ReplaceFunction(ConfigModel):
    """PBT's exploit step: the worst ``truncate_fraction`` of the population copies the best."""

    truncate_fraction: Annotated[float, Field(gt=0, le=0.5)]


class ExploreFunction(ConfigModel):
    """PBT's explore step: resample a copied hyperparameter, else perturb it by a factor."""

    resample_probability: Fraction
    perturb_factor: Fraction


class PBTConfig(_Searcher):
    """Population-based training."""

    name: Literal["pbt"]
    population_size: Annotated[int, Field(ge=1, le=MAX_TRIALS_AT_ONCE)]
    num_rounds: AtLeastOne
    length_per_round: PositiveLength
    replace_function: ReplaceFunction
    explore_function: ExploreFunction

    def plan(self) -> SearchPlan:
        # Searcher-driven, but no one planned length: a copy made after round k counts its own
        # training from there (see assay.searcher's PBT).
        per_round = self.length_per_round
        longest = per_round.value * self.num_rounds
        return SearchPlan(None, per_round.unit.value, code_driven=False, longest=longest)


class CustomConfig(ConfigModel):
    """A searcher written by the user (``class``: ``module:Class`` in the context directory).

    Unknown keys are kept, as in Determined: they are the custom searcher's own settings.
    """

    model_config = ConfigDict(extra="allow")

    name: Literal["custom"]
    metric: MetricName | None = None
    smaller_is_better: bool = True
    source_trial_id: NonNegative | None = None
    source_checkpoint_uuid: Annotated[str, Field(max_length=MAX_UUID)] | None = None
    class_: Annotated[str, Field(max_length=MAX_PATH)] | None = Field(default=None, alias="class")
    unit: Literal["batches", "records", "epochs"] | None = None
    class_args: dict[str, Any] | None = None
    """Keyword arguments of the class's constructor (an NNI custom tuner's ``classArgs``)."""
    max_trials: Trials | None = None
    """For the class to honour (it reads its settings as ``ctx.settings``): an NNI custom tuner
    stops after this many trials."""
    max_concurrent_trials: AtOnce | None = None
    """For the class to honour: an NNI custom tuner keeps this many trials running."""

    def plan(self) -> SearchPlan:
        # The user's class decides every length; the master drives its operations.
        return SearchPlan(None, self.unit or "units", code_driven=False, longest=None)


class SyncHalvingConfig(_EarlyStopping):
    """End of life in Determined; accepted so old configs parse, refused at submission."""

    name: Literal["sync_halving"]
    max_length: Length
    num_rungs: Rungs
    budget: Length
    divisor: Divisor = 4.0
    train_stragglers: bool = True

    def plan(self) -> SearchPlan:
        return _planned(self.max_length)


class AdaptiveConfig(_EarlyStopping):
    """End of life in Determined; accepted so old configs parse, refused at submission."""

    name: Literal["adaptive"]
    max_length: Length
    budget: Length
    bracket_rungs: Annotated[list[Rungs], Field(max_length=MAX_RUNGS)] = []
    divisor: Divisor = 4.0
    train_stragglers: bool = True
    mode: Literal["standard", "aggressive", "conservative"] = "standard"
    max_rungs: Rungs = 5

    def plan(self) -> SearchPlan:
        return _planned(self.max_length)


class AdaptiveSimpleConfig(_EarlyStopping):
    """End of life in Determined; accepted so old configs parse, refused at submission."""

    name: Literal["adaptive_simple"]
    max_length: Length
    max_trials: Trials
    divisor: Divisor = 4.0
    mode: Literal["standard", "aggressive", "conservative"] = "standard"
    max_rungs: Rungs = 5

    def plan(self) -> SearchPlan:
        return _planned(self.max_length)


_Members = (
    Annotated[SingleConfig, Tag("<single>")]
    | Annotated[RandomConfig, Tag("<random>")]
    | Annotated[GridConfig, Tag("<grid>")]
    | Annotated[AsyncHalvingConfig, Tag("<async_halving>")]
    | Annotated[AdaptiveASHAConfig, Tag("<adaptive_asha>")]
    | Annotated[HyperbandConfig, Tag("<hyperband>")]
    | Annotated[OptunaConfig, Tag("<optuna>")]
    | Annotated[PBTConfig, Tag("<pbt>")]
    | Annotated[AnnealConfig, Tag("<anneal>")]
    | Annotated[EvolutionConfig, Tag("<evolution>")]
    | Annotated[BatchConfig, Tag("<batch>")]
    | Annotated[CustomConfig, Tag("<custom>")]
    | Annotated[SyncHalvingConfig, Tag("<sync_halving>")]
    | Annotated[AdaptiveConfig, Tag("<adaptive>")]
    | Annotated[AdaptiveSimpleConfig, Tag("<adaptive_simple>")]
)


def _names(cls: type[ConfigModel]) -> tuple[str, ...]:
    """The ``name`` values a section class accepts (its ``Literal``)."""
    return get_args(cls.model_fields["name"].annotation)


def _tags(members: object) -> dict[str, str]:
    # Each member's names come from its own Literal, so no searcher name is written twice.
    tags: dict[str, str] = {}
    for member in get_args(members):
        cls, tag = get_args(member)
        tags.update(dict.fromkeys(_names(cls), tag.tag))
    return tags


_TAGS = _tags(_Members)

SearcherConfig = Annotated[_Members, tagged("name", _TAGS, "searcher")]
"""The ``searcher`` section; chosen by ``name``."""

SEARCHER_CONFIGS: tuple[type[ConfigModel], ...] = tuple(get_args(m)[0] for m in get_args(_Members))
"""Every class the ``searcher`` section may be, in the order of :data:`SearcherConfig`."""
SEARCHER_NAMES = tuple(_TAGS)
EOL_SEARCHERS = (
    *_names(SyncHalvingConfig),
    *_names(AdaptiveConfig),
    *_names(AdaptiveSimpleConfig),
)
# Searchers that decide how long trials train: they need max_length, or time_metric + max_time.
LENGTH_DRIVEN = (
    *_names(AsyncHalvingConfig),
    *_names(AdaptiveASHAConfig),
    *_names(HyperbandConfig),
)
