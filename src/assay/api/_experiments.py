"""``/api/v1/experiments``: create, list, read, and move experiments between states."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from assay.api._deps import MasterDep
from assay.api._serialize import checkpoint_json, experiment_json, trial_json
from assay.db import Experiment, checkpoints, experiments, trials
from assay.errors import InvalidRequest
from assay.master import Submission

router = APIRouter(prefix="/api/v1/experiments", tags=["experiments"])


class CreateExperiment(BaseModel):
    config: str = Field(description="The experiment config as written (YAML or JSON text).")
    context: str = Field(description="The context directory as a base64-encoded tar.gz.")
    overrides: list[str] = Field(default_factory=list, description="`key.path=value` overrides.")
    activate: bool = Field(default=True, description="False creates the experiment PAUSED.")


def _load(session: Session, experiment_id: int) -> Experiment:
    return experiments.require(session, experiment_id)


def _describe(session: Session, experiment_id: int, with_config: bool = True) -> dict[str, Any]:
    exp = _load(session, experiment_id)
    counts = trials.counts(session, [exp.id])[exp.id]
    return experiment_json(
        exp, counts=counts, best=trials.best_of(session, exp.id), with_config=with_config
    )


@router.post("", status_code=201)
async def create_experiment(body: CreateExperiment, master: MasterDep) -> dict[str, Any]:
    try:
        context = base64.b64decode(body.context, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidRequest(
            "context: not valid base64 (expected a base64-encoded tar.gz)"
        ) from None
    exp_id = await master.submit(
        Submission(
            config_text=body.config,
            context=context,
            overrides=tuple(body.overrides),
            activate=body.activate,
        )
    )
    return await master.db.run(lambda s: _describe(s, exp_id))


@router.get("")
async def list_experiments(
    master: MasterDep,
    state: list[str] = Query(default=[]),
    archived: bool = False,
    limit: int = Query(default=100, ge=1, le=1000),
    offset: int = Query(default=0, ge=0),
) -> dict[str, Any]:
    def read(session: Session) -> dict[str, Any]:
        rows, total = experiments.page(
            session, states=state, include_archived=archived, limit=limit, offset=offset
        )
        counts = trials.counts(session, [e.id for e in rows])
        return {
            "experiments": [experiment_json(e, counts=counts[e.id]) for e in rows],
            "pagination": {"total": total, "limit": limit, "offset": offset},
        }

    return await master.db.run(read)


@router.get("/{experiment_id}")
async def get_experiment(experiment_id: int, master: MasterDep) -> dict[str, Any]:
    return await master.db.run(lambda s: _describe(s, experiment_id))


@router.get("/{experiment_id}/trials")
async def list_trials(experiment_id: int, master: MasterDep) -> dict[str, Any]:
    def read(session: Session) -> dict[str, Any]:
        _load(session, experiment_id)
        return {"trials": [trial_json(t) for t in trials.of_experiment(session, experiment_id)]}

    return await master.db.run(read)


@router.get("/{experiment_id}/checkpoints")
async def list_checkpoints(experiment_id: int, master: MasterDep) -> dict[str, Any]:
    def read(session: Session) -> dict[str, Any]:
        _load(session, experiment_id)
        rows = checkpoints.of(session, experiment_id=experiment_id)
        return {"checkpoints": [checkpoint_json(c) for c in rows]}

    return await master.db.run(read)


@router.get("/{experiment_id}/wait")
async def wait_experiment(
    experiment_id: int, master: MasterDep, timeout: float = Query(default=30.0, ge=0, le=300)
) -> dict[str, Any]:
    state = await master.wait_experiment(experiment_id, timeout)
    return {"id": experiment_id, "state": state}


async def _transition(master: MasterDep, experiment_id: int, action: str) -> dict[str, Any]:
    if action == "pause":
        await master.pause(experiment_id)
    elif action == "activate":
        await master.activate(experiment_id)
    elif action == "cancel":
        await master.cancel(experiment_id)
    elif action == "kill":
        await master.kill(experiment_id)
    elif action == "archive":
        await master.set_archived(experiment_id, True)
    elif action == "unarchive":
        await master.set_archived(experiment_id, False)
    return await master.db.run(lambda s: _describe(s, experiment_id, with_config=False))


@router.post("/{experiment_id}/pause")
async def pause(experiment_id: int, master: MasterDep) -> dict[str, Any]:
    return await _transition(master, experiment_id, "pause")


@router.post("/{experiment_id}/activate")
async def activate(experiment_id: int, master: MasterDep) -> dict[str, Any]:
    return await _transition(master, experiment_id, "activate")


@router.post("/{experiment_id}/cancel")
async def cancel(experiment_id: int, master: MasterDep) -> dict[str, Any]:
    return await _transition(master, experiment_id, "cancel")


@router.post("/{experiment_id}/kill")
async def kill(experiment_id: int, master: MasterDep) -> dict[str, Any]:
    return await _transition(master, experiment_id, "kill")


@router.post("/{experiment_id}/archive")
async def archive(experiment_id: int, master: MasterDep) -> dict[str, Any]:
    return await _transition(master, experiment_id, "archive")


@router.post("/{experiment_id}/unarchive")
async def unarchive(experiment_id: int, master: MasterDep) -> dict[str, Any]:
    return await _transition(master, experiment_id, "unarchive")
