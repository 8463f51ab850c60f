"""``/api/v1/experiments``: create, list, read, and move experiments between states."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, File, Form, Query, UploadFile
from sqlalchemy.orm import Session

from assay.api._deps import MasterDep
from assay.api._serialize import checkpoint_json, experiment_json, trial_json
from assay.api._upload import UPLOAD_DESCRIPTION, UPLOAD_OPENAPI, read_context, require_multipart
from assay.db import Experiment
from assay.db import _queries as q
from assay.errors import NotFound
from assay.master import Submission

router = APIRouter(prefix="/api/v1/experiments", tags=["experiments"])


def _load(session: Session, experiment_id: int) -> Experiment:
    exp = session.get(Experiment, experiment_id)
    if exp is None:
        raise NotFound(f"experiment {experiment_id} not found")
    return exp


def _describe(session: Session, experiment_id: int, with_config: bool = True) -> dict[str, Any]:
    exp = _load(session, experiment_id)
    counts = q.trial_counts(session, [exp.id])[exp.id]
    return experiment_json(
        exp, counts=counts, best=q.best_trial(session, exp.id), with_config=with_config
    )


@router.post(
    "",
    status_code=201,
    description=UPLOAD_DESCRIPTION,
    dependencies=[Depends(require_multipart)],
    form_limits={"max_files": 1},
    openapi_extra=UPLOAD_OPENAPI,
    responses={413: {"description": "The body or the context archive is over its limit."}},
)
async def create_experiment(
    master: MasterDep,
    config: Annotated[
        str, Form(description="The experiment config as written (YAML or JSON text).")
    ],
    context: Annotated[
        UploadFile,
        File(
            description="The context directory as a tar.gz (`tar czf`).",
            # Swagger UI offers a file picker only for this spelling of "a file".
            json_schema_extra={"format": "binary"},
        ),
    ],
    overrides: Annotated[
        list[str], Form(default_factory=list, description="`key.path=value`, one per field.")
    ],
    activate: Annotated[bool, Form(description="False creates the experiment PAUSED.")] = True,
) -> dict[str, Any]:
    exp_id = await master.submit(
        Submission(
            config_text=config,
            context=await read_context(context),
            overrides=tuple(overrides),
            activate=activate,
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
        rows, total = q.list_experiments(
            session, states=state, include_archived=archived, limit=limit, offset=offset
        )
        counts = q.trial_counts(session, [e.id for e in rows])
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
        return {"trials": [trial_json(t) for t in q.trials_of(session, experiment_id)]}

    return await master.db.run(read)


@router.get("/{experiment_id}/checkpoints")
async def list_checkpoints(experiment_id: int, master: MasterDep) -> dict[str, Any]:
    def read(session: Session) -> dict[str, Any]:
        _load(session, experiment_id)
        rows = q.checkpoints_of(session, experiment_id=experiment_id)
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
