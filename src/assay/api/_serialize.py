"""Rows to JSON: the shapes the REST API answers with."""

from __future__ import annotations

from typing import Any

from assay.db import (
    AgentRecord,
    Allocation,
    Checkpoint,
    Experiment,
    Instance,
    Metric,
    TaskLog,
    Trial,
)


def experiment_json(
    exp: Experiment,
    *,
    counts: dict[str, int] | None = None,
    best: Trial | None = None,
    with_config: bool = False,
) -> dict[str, Any]:
    searcher = exp.config.get("searcher", {})
    out: dict[str, Any] = {
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
        "searcher": {
            "name": searcher.get("name"),
            "metric": searcher.get("metric"),
            "smaller_is_better": searcher.get("smaller_is_better", True),
        },
        "resource_pool": exp.config.get("resources", {}).get("resource_pool", ""),
        "trials": counts or {},
        "best_trial": None
        if best is None
        else {
            "id": best.id,
            "best_validation": best.best_validation,
            "latest_checkpoint": best.latest_checkpoint,
            "hparams": best.hparams,
        },
    }
    if with_config:
        out["config"] = exp.config
        out["original_config"] = exp.original_config
    return out


def trial_json(trial: Trial) -> dict[str, Any]:
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


def allocation_json(alloc: Allocation) -> dict[str, Any]:
    return {
        "id": alloc.id,
        "run": alloc.run,
        "pool": alloc.pool,
        "slots": alloc.slots,
        "state": alloc.state,
        "preempt": alloc.preempt,
        "exit_code": alloc.exit_code,
        "exit_reason": alloc.exit_reason,
        "created_at": alloc.created_at,
        "started_at": alloc.started_at,
        "ended_at": alloc.ended_at,
    }


def checkpoint_json(ckpt: Checkpoint) -> dict[str, Any]:
    return {
        "uuid": ckpt.uuid,
        "trial_id": ckpt.trial_id,
        "experiment_id": ckpt.experiment_id,
        "allocation_id": ckpt.allocation_id,
        "steps_completed": ckpt.steps_completed,
        "metadata": ckpt.meta,
        "resources": ckpt.resources,
        "size": ckpt.size,
        "state": ckpt.state,
        "reported_at": ckpt.reported_at,
    }


def metric_json(m: Metric) -> dict[str, Any]:
    return {
        "trial_id": m.trial_id,
        "run": m.run,
        "group": m.group,
        "steps_completed": m.steps_completed,
        "metrics": m.values,
        "time": m.reported_at,
        "archived": m.archived,
    }


def log_json(entry: TaskLog) -> dict[str, Any]:
    return {
        "id": entry.id,
        "trial_id": entry.trial_id,
        "allocation_id": entry.allocation_id,
        "rank": entry.rank,
        "stream": entry.stream,
        "time": entry.time,
        "line": entry.line,
    }


def agent_json(agent: AgentRecord, *, connected: bool, used_slots: set[str]) -> dict[str, Any]:
    return {
        "id": agent.id,
        "pool": agent.pool,
        "labels": agent.labels,
        "enabled": agent.enabled,
        "connected": connected,
        "address": agent.address,
        "version": agent.version,
        "slots": [{**slot, "allocated": str(slot.get("id")) in used_slots} for slot in agent.slots],
        "registered_at": agent.registered_at,
        "last_seen": agent.last_seen,
    }


def instance_json(row: Instance) -> dict[str, Any]:
    return {
        "id": row.id,
        "pool": row.pool,
        "state": row.state,
        "launched_at": row.launched_at,
        "idle_since": row.idle_since,
        "ended_at": row.ended_at,
        "message": row.message,
    }
