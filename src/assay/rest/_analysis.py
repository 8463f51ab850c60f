"""What the Experiment page analyses: the searcher's progress (an ASHA search's rungs) and the
importance of each hyperparameter to the searcher metric."""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from assay.rest._common import Resource


class Rung(Resource):
    """One rung of an ASHA bracket."""

    length: int = Field(description="The length trials train to for this rung (in `unit`).")
    reached: int = Field(
        description="Trials with a result here (one that exited early counts, as the worst)."
    )
    training: int = Field(description="Trials training towards this rung now.")
    promoted: int = Field(description="Trials with a result here that went on to a later rung.")
    best: float | None = Field(description="The best searcher metric reported here, if any.")


class Bracket(Resource):
    """One ASHA bracket (``async_halving`` has one; ``adaptive_asha`` several)."""

    rungs: list[Rung] = Field(description="Lowest first.")
    trials: int = Field(
        description="Trials it has created (not those with invalid hyperparameters)."
    )
    max_trials: int | None = Field(description="Trials it plans to create in all.")


class SearcherProgress(Resource):
    """How far an experiment's search has got."""

    experiment_id: int
    searcher: str | None = Field(description="The searcher's name.")
    unit: str = Field(description="What rung lengths count: batches, epochs, records, ...")
    progress: float = Field(description="Fraction of the searcher's planned work done, 0 to 1.")
    max_trials: int | None = Field(
        description="Trials the searcher plans in all, where it says (grid: its points)."
    )
    trials_created: int
    trials_completed: int = Field(description="Trials that ended COMPLETED.")
    trials_ended: int = Field(description="Trials that ended in any way.")
    brackets: list[Bracket] = Field(
        description="For the ASHA family (async_halving, adaptive_asha, code-driven "
        "hyperband): each bracket's rungs. Empty for other searchers."
    )


class ImportanceEvaluator(StrEnum):
    """Optuna's hyperparameter importance evaluators."""

    FANOVA = "fanova"
    PED_ANOVA = "ped_anova"
    MEAN_DECREASE_IMPURITY = "mean_decrease_impurity"


class HparamImportanceItem(Resource):
    name: str = Field(description="The hyperparameter, dotted when nested (`optimizer.lr`).")
    importance: float = Field(description="Its share of the importance, 0 to 1 (they sum to 1).")


class HparamImportance(Resource):
    """How much each hyperparameter explains the searcher metric over the finished trials."""

    experiment_id: int
    evaluator: ImportanceEvaluator
    metric: str | None = Field(description="The searcher metric.")
    trials: int = Field(description="The finished trials (COMPLETED, with a metric) used.")
    importances: list[HparamImportanceItem] = Field(description="Most important first.")
    message: str | None = Field(
        default=None,
        description="Why there are no importances (too few finished trials, nothing searched), "
        "or a note on how they were computed.",
    )
