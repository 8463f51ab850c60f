"""Rows to the REST resources the API answers with (``assay.rest``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from assay import rest
from assay.db import AgentRecord, Allocation, Checkpoint, Experiment, Metric, TaskLog, Trial


def _experiment_fields(
    exp: Experiment, counts: dict[str, int] | None, best: Trial | None
) -> dict[str, Any]:
    searcher = exp.config.get("searcher", {})
    return {
        "id": exp.id,
        "name": exp.name,
        "description": exp.description,
        "state": exp.state,
        "archived": exp.archived,
        "progress": exp.progress,
        "owner": exp.owner,
        "job_id": exp.job_id,
        "message": exp.message,
        "created_at": exp.created_at,
        "ended_at": exp.ended_at,
        "seed": exp.seed,
        "searcher": rest.SearcherSummary(
            name=searcher.get("name"),
            metric=searcher.get("metric"),
            smaller_is_better=searcher.get("smaller_is_better", True),
        ),
        "resource_pool": exp.config.get("resources", {}).get("resource_pool", ""),
        "trials": counts or {},
        "best_trial": None
        if best is None
        else rest.BestTrial(
            id=best.id,
            best_validation=best.best_validation,
            latest_checkpoint=best.latest_checkpoint,
            hparams=best.hparams,
        ),
    }


def experiment_summary(
    exp: Experiment, *, counts: dict[str, int] | None = None, best: Trial | None = None
) -> rest.ExperimentSummary:
    return rest.ExperimentSummary(**_experiment_fields(exp, counts, best))


def experiment(
    exp: Experiment, *, counts: dict[str, int] | None = None, best: Trial | None = None
) -> rest.Experiment:
    return rest.Experiment(
        **_experiment_fields(exp, counts, best),
        config=exp.config,
        original_config=exp.original_config,
    )


def _trial_fields(trial: Trial) -> dict[str, Any]:
    return {
        "id": trial.id,
        "experiment_id": trial.experiment_id,
        "request_id": trial.request_id,
        "state": trial.state,
        "hparams": trial.hparams,
        "seed": trial.seed,
        "restarts": trial.restarts,
        "runs": trial.runs,
        "steps_completed": trial.steps_completed,
        "latest_checkpoint": trial.latest_checkpoint,
        "best_validation": trial.best_validation,
        "progress": trial.progress,
        "early_stopped": trial.early_stopped,
        "early_exit": trial.early_exit,
        "message": trial.message,
        "created_at": trial.created_at,
        "ended_at": trial.ended_at,
    }


def trial(row: Trial) -> rest.Trial:
    return rest.Trial(**_trial_fields(row))


def trial_detail(row: Trial, allocations: Sequence[Allocation]) -> rest.TrialDetail:
    return rest.TrialDetail(**_trial_fields(row), allocations=[allocation(a) for a in allocations])


def allocation(alloc: Allocation) -> rest.Allocation:
    return rest.Allocation(
        id=alloc.id,
        run=alloc.run,
        pool=alloc.pool,
        slots={agent: [str(s) for s in slots] for agent, slots in (alloc.slots or {}).items()},
        state=alloc.state,
        preempt=alloc.preempt,
        exit_code=alloc.exit_code,
        exit_reason=alloc.exit_reason,
        created_at=alloc.created_at,
        started_at=alloc.started_at,
        ended_at=alloc.ended_at,
    )


def checkpoint(ckpt: Checkpoint) -> rest.Checkpoint:
    return rest.Checkpoint(
        uuid=ckpt.uuid,
        trial_id=ckpt.trial_id,
        experiment_id=ckpt.experiment_id,
        allocation_id=ckpt.allocation_id,
        steps_completed=ckpt.steps_completed,
        metadata=ckpt.meta,
        resources=ckpt.resources,
        size=ckpt.size,
        state=ckpt.state,
        reported_at=ckpt.reported_at,
    )


def metric(m: Metric) -> rest.Metric:
    return rest.Metric(
        trial_id=m.trial_id,
        run=m.run,
        group=m.group,
        steps_completed=m.steps_completed,
        metrics=m.values,
        time=m.reported_at,
        archived=m.archived,
    )


def log_entry(entry: TaskLog) -> rest.LogEntry:
    return rest.LogEntry(
        id=entry.id,
        trial_id=entry.trial_id,
        allocation_id=entry.allocation_id,
        rank=entry.rank,
        stream=entry.stream,
        time=entry.time,
        line=entry.line,
    )


def agent(row: AgentRecord, *, connected: bool, used_slots: set[str]) -> rest.Agent:
    return rest.Agent(
        id=row.id,
        pool=row.pool,
        labels=[str(label) for label in row.labels],
        enabled=row.enabled,
        connected=connected,
        address=row.address,
        version=row.version,
        slots=[
            rest.AgentSlot(
                id=str(slot.get("id")),
                type=str(slot.get("type", "")),
                uuid=str(slot.get("uuid", "")),
                name=str(slot.get("name", "")),
                allocated=str(slot.get("id")) in used_slots,
            )
            for slot in row.slots
        ],
        registered_at=row.registered_at,
        last_seen=row.last_seen,
    )
