"""Determined's experiment requests (``det experiment ...``, the SDK's ``create_experiment``,
``get_experiment``, ``list_experiments``, ``Experiment.wait``/``pause``/``kill``...), each one
call to assay's master and a conversion to Determined's shapes."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import Query

from assay import rest
from assay.api._deps import ExperimentId, MasterDep
from assay.api._limits import RouteLimit
from assay.api.determined._base import ActorDep, Limit, Offset, Order, signed_router
from assay.config import MAX_CONFIG_BYTES
from assay.context import (
    DEFAULT_CONTEXT_LIMIT,
    MAX_MEMBERS,
    ContextEntry,
    archive_entries,
    format_limit,
)
from assay.errors import InvalidRequest, NotFound
from assay.master import ExperimentsAsk, Master, Submission
from assay.master.identity import Actor
from assay.rest import determined as det

router = signed_router()

CREATE_LIMIT = RouteLimit(
    DEFAULT_CONTEXT_LIMIT * 4 // 3 + 2 * MAX_CONFIG_BYTES + MAX_MEMBERS * 320,
    hint=(
        f"a context may hold at most {format_limit(DEFAULT_CONTEXT_LIMIT)} of files, sent as "
        "base64; leave big files out of it (.detignore) and load data from outside it"
    ),
)
"""The body of ``POST /det/api/v1/experiments``: the context's files in base64 (a third
larger), the config, and each file's JSON around its content."""

_DIR = 53  # tar's DIRTYPE ("5"), as Determined's clients send a directory's type
_FILE = 48  # tar's REGTYPE ("0")

_SORTS = {
    det.ExperimentSortBy.UNSPECIFIED: rest.ExperimentSort.ID,
    det.ExperimentSortBy.ID: rest.ExperimentSort.ID,
    det.ExperimentSortBy.START_TIME: rest.ExperimentSort.START,
    det.ExperimentSortBy.END_TIME: rest.ExperimentSort.END,
    det.ExperimentSortBy.STATE: rest.ExperimentSort.STATE,
    det.ExperimentSortBy.NUM_TRIALS: rest.ExperimentSort.TRIALS,
    det.ExperimentSortBy.PROGRESS: rest.ExperimentSort.PROGRESS,
    det.ExperimentSortBy.USER: rest.ExperimentSort.USER,
    det.ExperimentSortBy.NAME: rest.ExperimentSort.NAME,
    det.ExperimentSortBy.SEARCHER_METRIC_VAL: rest.ExperimentSort.BEST,
}
"""Determined's orders of the list that assay's list has; the others are refused by name."""

Text = Annotated[str | None, Query(max_length=256, pattern=rest.NO_NUL)]


@router.get("/api/v1/experiments")
async def list_experiments(
    master: MasterDep,
    users: Annotated[list[Annotated[str, Query(max_length=64)]], Query()] = [],  # noqa: B006
    user_ids: Annotated[list[int], Query(alias="userIds")] = [],  # noqa: B006
    labels: Annotated[list[Annotated[str, Query(max_length=256)]], Query()] = [],  # noqa: B006
    states: Annotated[list[det.DetExperimentState], Query()] = [],  # noqa: B006
    archived: bool | None = None,
    name: Text = None,
    description: Text = None,
    sort_by: Annotated[det.ExperimentSortBy, Query(alias="sortBy")] = det.ExperimentSortBy.ID,
    order_by: Order = det.OrderBy.ASC,
    offset: Offset = 0,
    limit: Limit = 0,
    project_id: Annotated[int | None, Query(alias="projectId")] = None,
    show_trial_data: Annotated[bool, Query(alias="showTrialData")] = False,
) -> det.GetExperimentsResponse:
    """``det experiment list`` (the signed-in user's, unarchived, unless ``--all``): matching
    every filter given, ordered by ``sortBy`` (id by default, oldest first), paged. Each
    experiment always carries its best trial, so ``showTrialData`` asks for nothing more."""
    if user_ids:
        raise InvalidRequest("userIds: filter by user name (users=NAME) instead of by id")
    sort = _SORTS.get(sort_by)
    if sort is None:
        orders = ", ".join(s.value for s in _SORTS)
        raise InvalidRequest(f"sortBy {sort_by.value} is not an order assay keeps: use {orders}")
    if project_id not in (None, 0, det.DEFAULT_PROJECT_ID):
        raise NotFound(f"project {project_id} not found: assay has one project, id 1")
    wanted: list[str] = [s.value for state in states for s in state.assay]
    if states and not wanted:
        # Only states no experiment of assay's is in (deleting, deleted): none match.
        wanted = ["NONE"]
    filters = _filters(users, labels, wanted, archived, name, description)
    start = offset
    if offset < 0:  # from the end: the total first
        first = await master.reads.experiments(ExperimentsAsk(**filters, limit=1))
        total = first.pagination.total
        start = det.paginate(total, offset, limit).start_index
    found = await master.reads.experiments(
        ExperimentsAsk(
            **filters,
            sort=sort,
            order=rest.SortOrder.DESC if order_by == det.OrderBy.DESC else rest.SortOrder.ASC,
            limit=limit or rest.INT_MAX,
            offset=start,
            full=True,
        )
    )
    page = det.paginate(found.pagination.total, offset, limit)
    return det.GetExperimentsResponse(
        experiments=[det.det_experiment(_full(e), _pool(master)) for e in found.experiments],
        pagination=page,
    )


def _filters(
    users: list[str],
    labels: list[str],
    states: list[Any],
    archived: bool | None,
    name: str | None,
    description: str | None,
) -> dict[str, Any]:
    return {
        "owners": tuple(users),
        "labels": tuple(labels),
        "states": tuple(states),
        "archived": archived is None,
        "only_archived": archived is True,
        "name": name,
        "description": description,
    }


def _pool(master: Master) -> str:
    """The pool an experiment that names none runs in, as Determined's clients show it."""
    return master.settings.default_compute_pool


def _full(exp: rest.ExperimentSummary) -> rest.Experiment:
    assert isinstance(exp, rest.Experiment)  # read with full=True
    return exp


@router.get("/api/v1/experiments/{experiment_id}")
async def get_experiment(
    experiment_id: ExperimentId, master: MasterDep
) -> det.GetExperimentResponse:
    exp = await master.reads.experiment(experiment_id)
    return det.GetExperimentResponse(
        experiment=det.det_experiment(exp, _pool(master)), config=exp.config
    )


@router.get("/api/v1/experiments/{experiment_id}/model_def")
async def model_def(experiment_id: ExperimentId, master: MasterDep) -> det.ModelDef:
    """``det experiment download-model-def``: the context the experiment's trials run in."""
    data = await master.reads.experiment_context(experiment_id)
    return det.ModelDef(b64_tgz=base64.b64encode(data).decode())


@router.post("/api/v1/experiments")
async def create_experiment(
    body: det.CreateExperiment, master: MasterDep, actor: ActorDep
) -> det.CreateExperimentResponse:
    """``det experiment create CONFIG CONTEXT`` and ``client.create_experiment``: the context
    arrives as files, made into an archive checked as any upload is."""
    if body.template:
        raise InvalidRequest("template: assay has no config templates; put the keys in the config")
    if body.parent_id is not None:
        raise InvalidRequest(
            f"parentId: forking is `assay experiment fork {body.parent_id} --config KEY=VALUE`"
        )
    if body.unmanaged:
        raise InvalidRequest("unmanaged: assay runs every experiment's trials itself")
    if body.project_id not in (None, 0, det.DEFAULT_PROJECT_ID):
        raise NotFound(f"project {body.project_id} not found: assay has one project, id 1")
    if not body.config:
        raise InvalidRequest("config: the experiment config (YAML text) is required")
    sub = Submission(
        config_text=body.config,
        context=archive_entries(_entries(body.model_definition or [])),
        activate=True if body.activate is None else body.activate,
    )
    if body.validate_only:
        # Checked as a submission is, creating nothing: Determined answers an empty
        # experiment (id 0) then, and so does this.
        checked = await master.experiments.validate(actor, sub)
        return det.CreateExperimentResponse(experiment=det.validated(checked), config={})
    exp = await master.experiments.create(actor, sub)
    return det.CreateExperimentResponse(
        experiment=det.det_experiment(exp, _pool(master)), config=exp.config
    )


def _entries(files: list[det.File]) -> list[ContextEntry]:
    entries = []
    for i, f in enumerate(files):
        where = f"modelDefinition[{i}] ({f.path!r})"
        if f.type not in (_FILE, _DIR):
            raise InvalidRequest(
                f"{where}: type {f.type} is neither a file (48) nor a directory (53)"
            )
        try:
            data = base64.b64decode(f.content, validate=True) if f.type == _FILE else b""
        except (binascii.Error, ValueError) as exc:
            raise InvalidRequest(f"{where}: content is not base64: {exc}") from None
        try:
            mtime = int(f.mtime)
        except ValueError:
            raise InvalidRequest(f"{where}: mtime {f.mtime!r} is not a number of seconds") from None
        entries.append(ContextEntry(f.path, f.type == _DIR, data, f.mode, mtime))
    return entries


_STATE_CHANGES: dict[str, Callable[[Master, Actor, int], Awaitable[object]]] = {
    "activate": lambda m, a, i: m.experiments.activate(a, i),
    "pause": lambda m, a, i: m.experiments.pause(a, i),
    "cancel": lambda m, a, i: m.experiments.cancel(a, i),
    "kill": lambda m, a, i: m.experiments.kill(a, i),
    "archive": lambda m, a, i: m.experiments.set_archived(a, i, True),
    "unarchive": lambda m, a, i: m.experiments.set_archived(a, i, False),
}
"""``det experiment activate|pause|cancel|kill|archive|unarchive``: each one of assay's own
state changes, answered with Determined's empty object."""


def _state_route(
    change: Callable[[Master, Actor, int], Awaitable[object]],
) -> Callable[[int, Master, Actor], Awaitable[det.Empty]]:
    async def route(experiment_id: ExperimentId, master: MasterDep, actor: ActorDep) -> det.Empty:
        await change(master, actor, experiment_id)
        return det.Empty()

    return route


for _verb, _change in _STATE_CHANGES.items():
    router.post(f"/api/v1/experiments/{{experiment_id}}/{_verb}", name=_verb)(_state_route(_change))


@router.delete("/api/v1/experiments/{experiment_id}")
async def delete(experiment_id: ExperimentId, master: MasterDep, actor: ActorDep) -> det.Empty:
    """An ended experiment, its checkpoints from storage first (done when this answers, where
    Determined's master answers first and deletes after)."""
    await master.experiments.delete(actor, experiment_id)
    return det.Empty()


@router.patch("/api/v1/experiments/{experiment_id}")
async def patch(
    experiment_id: ExperimentId, body: det.PatchExperiment, master: MasterDep, actor: ActorDep
) -> det.PatchExperimentResponse:
    """``det experiment set description|name|labels|gc-policy|max-slots|weight|priority``."""
    if body.id != experiment_id:
        raise InvalidRequest(f"id {body.id} is not the experiment of the path, {experiment_id}")
    if body.notes:
        raise InvalidRequest("notes: assay keeps no notes on an experiment; use its description")
    changes: dict[str, Any] = {
        k: v
        for k, v in body.model_dump(
            include={"name", "description", "labels"}, by_alias=False
        ).items()
        if v is not None
    }
    if body.resources is not None:
        changes.update(body.resources.model_dump(exclude_unset=True, by_alias=False))
    if changes:
        await master.experiments.set_resources(actor, experiment_id, changes)
    if body.checkpoint_storage is not None:
        policy = body.checkpoint_storage
        await master.experiments.collect_checkpoints(
            actor,
            experiment_id,
            rest.GcPolicy(
                save_experiment_best=policy.save_experiment_best,
                save_trial_best=policy.save_trial_best,
                save_trial_latest=policy.save_trial_latest,
            ),
        )
    exp = await master.reads.experiment(experiment_id)
    return det.PatchExperimentResponse(experiment=det.det_experiment(exp, _pool(master)))


# A checkpoint without a validation has no ``step`` key at all: det tests for the key, then
# reads the validation from it.
@router.get("/experiments/{experiment_id}/preview_gc", response_model_exclude_none=True)
async def preview_gc(
    experiment_id: ExperimentId,
    master: MasterDep,
    actor: ActorDep,
    save_experiment_best: Annotated[int | None, Query(ge=0, le=rest.INT_MAX)] = None,
    save_trial_best: Annotated[int | None, Query(ge=0, le=rest.INT_MAX)] = None,
    save_trial_latest: Annotated[int | None, Query(ge=0, le=rest.INT_MAX)] = None,
) -> det.GcPreview:
    """What ``det experiment set gc-policy`` shows before it asks: the checkpoints the policy
    would delete."""
    found = await master.experiments.collect_checkpoints(
        actor,
        experiment_id,
        rest.GcPolicy(
            save_experiment_best=save_experiment_best,
            save_trial_best=save_trial_best,
            save_trial_latest=save_trial_latest,
            dry_run=True,
        ),
    )
    exp = await master.reads.experiment(experiment_id)
    return det.gc_preview(found, exp.searcher.metric or "")


@router.post("/api/v1/experiments/continue")
async def continue_experiment(
    body: det.ContinueExperiment, master: MasterDep, actor: ActorDep
) -> det.ContinueExperimentResponse:
    """``det experiment continue ID [--config KEY=VALUE]``: the experiment's one trial trained
    further from its latest checkpoint, with ``overrideConfig`` laid over its config. assay
    makes a new experiment of it (the ended one keeps its record), and answers that."""
    overrides = det.config_overrides(body.override_config or "")
    exp = await master.experiments.continue_trial(
        actor, body.id, rest.ExperimentContinue(overrides=overrides)
    )
    return det.ContinueExperimentResponse(experiment=det.det_experiment(exp, _pool(master)))
