"""``/api/v1/experiments``: create, list, read, and move experiments between states."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, File, Form, Query, UploadFile
from fastapi.responses import Response

from assay import rest
from assay.api._deps import SIGNED_IN, ActorDep, ExperimentId, MasterDep
from assay.api._upload import (
    UPLOAD_DESCRIPTION,
    UPLOAD_OPENAPI,
    UploadRoute,
    read_context,
    require_multipart,
)
from assay.errors import NotFound
from assay.master import ExperimentsAsk, Submission, TrialsAsk

TRIAL_IDS = rf"^[0-9]{{1,10}}(,[0-9]{{1,10}}){{0,{rest.MAX_SERIES_TRIALS - 1}}}$"
"""``trial_ids`` of a read of learning curves: at most as many as one read covers."""

router = APIRouter(
    prefix="/api/v1/experiments",
    tags=["experiments"],
    dependencies=SIGNED_IN,
    route_class=UploadRoute,
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
    actor: ActorDep,
    config: Annotated[
        str,
        Form(
            description="The experiment config as written (YAML or JSON text): assay's "
            "(Determined's), or NNI's, which is read against the context: the directory "
            "holding the config, whose `trialCodeDirectory` the trials then get."
        ),
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
    notes: Annotated[
        list[str],
        Form(
            default_factory=list,
            description="Lines for the experiment's log, stored with it (what a config reader "
            "decided, such as a tuner mapped onto a searcher), one per field.",
        ),
    ],
    activate: Annotated[bool, Form(description="False creates the experiment PAUSED.")] = True,
    original_config: Annotated[
        str,
        Form(
            description="Optional: the config as its author wrote it, when `config` is a "
            "client's translation of it (an NNI config the CLI read): kept and shown as the "
            "experiment's `original_config` instead of `config`.",
        ),
    ] = "",
) -> rest.Experiment:
    return await master.experiments.create(
        actor,
        Submission(
            config_text=config,
            context=await read_context(context),
            overrides=tuple(overrides),
            activate=activate,
            notes=tuple(notes),
            original_text=original_config,
        ),
    )


@router.post(
    "/validate",
    dependencies=[Depends(require_multipart)],
    form_limits={"max_files": 1},
    openapi_extra=UPLOAD_OPENAPI,
)
async def validate_experiment(
    master: MasterDep,
    actor: ActorDep,
    config: Annotated[
        str,
        Form(description="The experiment config as written: assay's (Determined's) or NNI's."),
    ],
    overrides: Annotated[
        list[str], Form(default_factory=list, description="`key.path=value`, one per field.")
    ],
    context: Annotated[
        UploadFile | None,
        File(
            description="Optional: the context tar.gz, checked as a submission's (an NNI "
            "config's search space file is read from it).",
            json_schema_extra={"format": "binary"},
        ),
    ] = None,
) -> rest.ExperimentValidation:
    """Check an experiment as `POST /api/v1/experiments` would, creating nothing: the same
    config, resource-pool and storage checks (and the context's, when one is sent). Invalid
    answers 400 with each problem's `path` (dotted, with `[i]` list indices) and `message`."""
    return await master.experiments.validate(
        actor,
        Submission(
            config_text=config,
            context=b"" if context is None else await read_context(context),
            overrides=tuple(overrides),
        ),
    )


@router.get("", response_model=rest.ExperimentList)
async def list_experiments(
    master: MasterDep,
    state: Annotated[list[rest.ExperimentState], Query()] = [],  # noqa: B006
    archived: Annotated[bool, Query(description="Archived ones too.")] = False,
    user: Annotated[
        str | None, Query(max_length=64, pattern=rest.NO_NUL, description="Only this owner's.")
    ] = None,
    name: Annotated[
        str | None,
        Query(
            max_length=256,
            pattern=rest.NO_NUL,
            description="Only those whose name holds this (any case).",
        ),
    ] = None,
    label: Annotated[
        str | None,
        Query(max_length=256, pattern=rest.NO_NUL, description="Only those with this label."),
    ] = None,
    sort: rest.ExperimentSort = rest.ExperimentSort.ID,
    order: rest.SortOrder = rest.SortOrder.DESC,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=rest.INT_MAX)] = 0,
) -> Response:
    """A page of experiments: newest first by default; ``pagination.total`` counts every
    match."""
    ask = ExperimentsAsk(
        states=tuple(s.value for s in state),
        archived=archived,
        owner=user,
        name=name,
        label=label,
        sort=sort,
        order=order,
        limit=limit,
        offset=offset,
    )
    return Response(await master.reads.experiments_json(ask), media_type="application/json")


@router.get("/{experiment_id}", response_model=rest.Experiment)
async def get_experiment(experiment_id: ExperimentId, master: MasterDep) -> Response:
    body = await master.reads.experiment_json(experiment_id)
    return Response(body, media_type="application/json")


@router.get("/{experiment_id}/trials", response_model=rest.TrialList)
async def list_trials(
    experiment_id: ExperimentId,
    master: MasterDep,
    state: Annotated[list[rest.TrialState], Query()] = [],  # noqa: B006
    sort: rest.TrialSort = rest.TrialSort.ID,
    order: rest.SortOrder = rest.SortOrder.ASC,
    limit: Annotated[
        int | None, Query(ge=1, le=10_000, description="A page of this many; all when absent.")
    ] = None,
    offset: Annotated[int, Query(ge=0, le=rest.INT_MAX)] = 0,
) -> Response:
    """The experiment's trials, by id by default; ``sort=best`` ranks them by the searcher
    metric (``order=asc``: best first, whichever way the metric points)."""
    ask = TrialsAsk(
        experiment_id,
        states=tuple(s.value for s in state),
        sort=sort,
        order=order,
        limit=limit,
        offset=offset,
    )
    return Response(await master.reads.trials_json(ask), media_type="application/json")


@router.get("/{experiment_id}/metrics")
async def list_curves(
    experiment_id: ExperimentId,
    master: MasterDep,
    trial_ids: Annotated[
        str,
        Query(
            max_length=rest.MAX_SERIES_TRIALS * 11,
            pattern=TRIAL_IDS,
            description=f"Comma-separated trial ids, at most {rest.MAX_SERIES_TRIALS}.",
        ),
    ],
    group: Annotated[
        str | None, Query(max_length=64, pattern=rest.NO_NUL, description="validation by default.")
    ] = None,
    metric: Annotated[
        str | None,
        Query(max_length=256, pattern=rest.NO_NUL, description="The searcher's by default."),
    ] = None,
    max_points: Annotated[
        int, Query(ge=2, le=100_000, description="Per trial; evenly spaced when it has more.")
    ] = 1000,
    times: Annotated[
        bool, Query(description="Also when each point was reported (for time on the x-axis).")
    ] = False,
) -> rest.MetricSeriesList:
    """Learning curves of many trials in one read (what the Experiment page draws): one metric
    of one group for each, and the names of every metric they reported."""
    ids = list(dict.fromkeys(int(t) for t in trial_ids.split(",")))
    if max(ids) > rest.INT_MAX:
        # No trial has an id the database cannot hold: as any id the experiment lacks.
        raise NotFound(f"experiment {experiment_id} has no trial {max(ids)}")
    return await master.reads.curves(
        experiment_id, ids, group=group, metric=metric, max_points=max_points, times=times
    )


@router.get("/{experiment_id}/notes")
async def list_notes(
    experiment_id: ExperimentId,
    master: MasterDep,
    after: Annotated[int, Query(ge=0, le=rest.INT_MAX, description="Notes after this id.")] = 0,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
) -> rest.ExperimentNoteList:
    """The experiment's own log: what the master decided about it, oldest first."""
    return await master.reads.notes(experiment_id, after=after, limit=limit)


@router.get("/{experiment_id}/checkpoints")
async def list_checkpoints(experiment_id: ExperimentId, master: MasterDep) -> rest.CheckpointList:
    return await master.reads.experiment_checkpoints(experiment_id)


@router.get("/{experiment_id}/wait")
async def wait_experiment(
    experiment_id: ExperimentId,
    master: MasterDep,
    timeout: Annotated[float, Query(ge=0, le=300)] = 30.0,
) -> rest.ExperimentStateAnswer:
    """Wait up to ``timeout`` seconds for the experiment to end; its state then."""
    return await master.experiments.wait(experiment_id, timeout)


@router.post("/{experiment_id}/pause")
async def pause(
    experiment_id: ExperimentId, master: MasterDep, actor: ActorDep
) -> rest.ExperimentSummary:
    return await master.experiments.pause(actor, experiment_id)


@router.post("/{experiment_id}/activate")
async def activate(
    experiment_id: ExperimentId, master: MasterDep, actor: ActorDep
) -> rest.ExperimentSummary:
    return await master.experiments.activate(actor, experiment_id)


@router.post("/{experiment_id}/cancel")
async def cancel(
    experiment_id: ExperimentId, master: MasterDep, actor: ActorDep
) -> rest.ExperimentSummary:
    return await master.experiments.cancel(actor, experiment_id)


@router.post("/{experiment_id}/kill")
async def kill(
    experiment_id: ExperimentId, master: MasterDep, actor: ActorDep
) -> rest.ExperimentSummary:
    return await master.experiments.kill(actor, experiment_id)


@router.post("/{experiment_id}/archive")
async def archive(
    experiment_id: ExperimentId, master: MasterDep, actor: ActorDep
) -> rest.ExperimentSummary:
    return await master.experiments.set_archived(actor, experiment_id, True)


@router.post("/{experiment_id}/unarchive")
async def unarchive(
    experiment_id: ExperimentId, master: MasterDep, actor: ActorDep
) -> rest.ExperimentSummary:
    return await master.experiments.set_archived(actor, experiment_id, False)


@router.post("/{experiment_id}/fork", status_code=201)
async def fork(
    experiment_id: ExperimentId, body: rest.ExperimentFork, master: MasterDep, actor: ActorDep
) -> rest.Experiment:
    """A new experiment with this one's config (overrides applied) and context."""
    return await master.experiments.fork(actor, experiment_id, body)


@router.post("/{experiment_id}/continue", status_code=201)
async def continue_trial(
    experiment_id: ExperimentId, body: rest.ExperimentContinue, master: MasterDep, actor: ActorDep
) -> rest.Experiment:
    """A new experiment whose one trial trains a trial of this ended experiment further, from
    its latest checkpoint, with the same hyperparameters."""
    return await master.experiments.continue_trial(actor, experiment_id, body)


@router.delete(
    "/{experiment_id}",
    responses={409: {"description": "It has not ended, or a checkpoint could not be deleted."}},
)
async def delete_experiment(
    experiment_id: ExperimentId,
    master: MasterDep,
    actor: ActorDep,
    dry_run: Annotated[
        bool,
        Query(
            description="Only check: refused as the deletion would be; otherwise nothing is "
            "deleted and the answer counts what would be."
        ),
    ] = False,
) -> rest.ExperimentDeleted:
    """Delete an ended experiment: its checkpoints from storage first, then its rows and its
    context (when no other experiment uses it). Owner or admin only."""
    return await master.experiments.delete(actor, experiment_id, dry_run=dry_run)


@router.post(
    "/{experiment_id}/gc",
    responses={403: {"description": "Not the experiment's owner or an admin."}},
)
async def collect_checkpoints(
    experiment_id: ExperimentId, body: rest.GcPolicy, master: MasterDep, actor: ActorDep
) -> rest.GcResult:
    """Garbage-collect the experiment's checkpoints under a new policy (Determined's
    `set gc-policy`): a checkpoint is kept if it is among the experiment's best N, its trial's
    best N or its trial's latest N; omitted numbers keep the experiment's. Files are deleted
    first, then rows marked DELETED; the policy is stored for the experiment's end. Never
    collects what a trial that has not ended may still load. Owner or admin only."""
    return await master.experiments.collect_checkpoints(actor, experiment_id, body)
