"""``/api/v1/experiments/{id}/...``: the Experiment page's analyses, searcher progress and
hyperparameter importance."""

from __future__ import annotations

from fastapi import APIRouter

from assay import rest
from assay.api._deps import SIGNED_IN, ExperimentId, MasterDep

router = APIRouter(prefix="/api/v1/experiments", tags=["experiments"], dependencies=SIGNED_IN)


@router.get("/{experiment_id}/searcher-progress")
async def searcher_progress(
    experiment_id: ExperimentId, master: MasterDep
) -> rest.SearcherProgress:
    """Trials created and ended against the searcher's plan and, for the ASHA family, each
    bracket's rungs: how many trials reached each, are training towards it, went on from it."""
    return await master.analysis.searcher_progress(experiment_id)


@router.get("/{experiment_id}/hparam-importance")
async def hparam_importance(
    experiment_id: ExperimentId,
    master: MasterDep,
    evaluator: rest.ImportanceEvaluator | None = None,
) -> rest.HparamImportance:
    """How much each searched hyperparameter explains the searcher metric over the finished
    trials, by one of Optuna's importance evaluators: PED-ANOVA (Optuna's default), fANOVA or
    mean decrease impurity (these two need scikit-learn in the master's environment). With
    fewer than 2 finished trials, no importances and a message saying so."""
    return await master.analysis.hparam_importance(experiment_id, evaluator)
