"""The model registry for the real ``det`` (``det model create``, ``list``, ``describe``,
``register-version``, ``list-versions``, ``delete``) and Determined's SDK (``create_model``,
``get_model``, ``list_models``, ``Model.register_version``, ``get_version``,
``list_versions``, ``set_description``, ``set_labels``, ``delete``), on assay's registry.

A model is named by its name or, as Determined's clients also name one, its id. What assay's
models lack (metadata, notes, workspaces other than Determined's default, archiving) is
refused, saying so, rather than dropped."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from fastapi import Path, Query

from assay import rest
from assay.api._deps import MasterDep
from assay.api.determined._base import ActorDep, Limit, Offset, Order, signed_router
from assay.api.determined._checkpoints import checkpoint_view
from assay.errors import InvalidRequest, NotFound
from assay.master import Master
from assay.master.artifacts import CheckpointContext
from assay.rest import determined as det

router = signed_router()

ModelName = Annotated[
    str, Path(max_length=128, pattern=rest.NO_NUL, description="The model's name or id.")
]
VersionNumber = Annotated[int, Path(ge=1, le=rest.INT_MAX)]
_WORKSPACE_NAMES = {det.DEFAULT_PROJECT.lower()}
_LIST_PAGE = 1000


@router.post("/api/v1/models")
async def create_model(
    body: det.PostModel, master: MasterDep, actor: ActorDep
) -> det.ModelResponse:
    _refuse_unmapped(body.metadata, body.notes, labels=None)
    _refuse_workspace(body.workspace_name, body.workspace_id)
    created = await master.models.create(
        actor,
        rest.ModelCreate(
            name=body.name, description=body.description or "", labels=body.labels or []
        ),
    )
    context = await master.checkpoints.context([], [created.owner])
    return det.ModelResponse(model=model_view(created, context))


@router.get("/api/v1/models")
async def list_models(
    master: MasterDep,
    name: Annotated[str | None, Query(max_length=128)] = None,
    description: Annotated[str | None, Query(max_length=8192)] = None,
    model_id: Annotated[int | None, Query(alias="id", ge=0, le=rest.INT_MAX)] = None,
    labels: Annotated[list[str], Query(max_length=100)] = [],  # noqa: B006
    archived: bool | None = None,
    users: Annotated[list[str], Query(max_length=100)] = [],  # noqa: B006
    user_ids: Annotated[list[int], Query(alias="userIds", max_length=100)] = [],  # noqa: B006
    workspace_names: Annotated[list[str], Query(alias="workspaceNames", max_length=100)] = [],  # noqa: B006
    workspace_ids: Annotated[list[int], Query(alias="workspaceIds", max_length=100)] = [],  # noqa: B006
    sort_by: Annotated[det.ModelSortBy, Query(alias="sortBy")] = det.ModelSortBy.UNSPECIFIED,
    order_by: Order = det.OrderBy.UNSPECIFIED,
    offset: Offset = 0,
    limit: Limit = 0,
) -> det.ModelList:
    """The models matching every filter given, sorted and paged as Determined's master
    does (names and descriptions match in part, in any case)."""
    models = await _every_model(master)
    context = await master.checkpoints.context([], [m.owner for m in models])
    shown = [model_view(m, context) for m in models]
    in_workspace = (
        not workspace_names or _WORKSPACE_NAMES & {w.lower() for w in workspace_names}
    ) and (not workspace_ids or det.DEFAULT_PROJECT_ID in workspace_ids)
    wanted = [
        m
        for m in shown
        if in_workspace
        and (name is None or name.lower() in m.name.lower())
        and (description is None or description.lower() in m.description.lower())
        and (model_id is None or model_id in (0, m.id))
        and set(labels) <= set(m.labels)
        and archived is not True
        and (not users or m.username in users)
        and (not user_ids or m.user_id in user_ids)
    ]
    key = _MODEL_KEYS.get(sort_by, _MODEL_KEYS[det.ModelSortBy.NAME])
    wanted.sort(key=key, reverse=order_by == det.OrderBy.DESC)
    page = det.paginate(len(wanted), offset, limit)
    return det.ModelList(models=wanted[page.start_index : page.end_index], pagination=page)


@router.get("/api/v1/models/{model_name}")
async def get_model(model_name: ModelName, master: MasterDep) -> det.ModelResponse:
    found = await master.models.get(await _name(master, model_name))
    context = await master.checkpoints.context([], [found.owner])
    return det.ModelResponse(model=model_view(found, context))


@router.patch("/api/v1/models/{model_name}")
async def patch_model(
    model_name: ModelName, body: det.PatchModel, master: MasterDep, actor: ActorDep
) -> det.ModelResponse:
    """Change the description or labels (``set_description``, ``set_labels``)."""
    name = await _name(master, model_name)
    if body.name is not None and body.name != name:
        raise InvalidRequest(
            f"assay does not rename models (asked to rename {name!r} to {body.name!r}): "
            "create a model of the new name and register its versions there"
        )
    _refuse_unmapped(body.metadata, body.notes, labels=None)
    _refuse_workspace(body.workspace_name, body.workspace_id)
    changed = await master.models.change(
        actor, name, rest.ModelChange(description=body.description, labels=body.labels)
    )
    context = await master.checkpoints.context([], [changed.owner])
    return det.ModelResponse(model=model_view(changed, context))


@router.delete("/api/v1/models/{model_name}")
async def delete_model(
    model_name: ModelName, master: MasterDep, actor: ActorDep
) -> det.EmptyResponse:
    """Delete the model and its versions; their checkpoints stay."""
    await master.models.delete(actor, await _name(master, model_name))
    return det.EmptyResponse()


@router.post("/api/v1/models/{model_name}/versions")
async def register_version(
    model_name: ModelName, body: det.PostModelVersion, master: MasterDep, actor: ActorDep
) -> det.ModelVersionResponse:
    """Register a checkpoint as the model's next version (``det model register-version``)."""
    _refuse_unmapped(body.metadata, body.notes, labels=body.labels)
    name = await _name(master, model_name)
    made = await master.models.register(
        actor,
        name,
        rest.ModelVersionCreate(
            checkpoint_uuid=body.checkpoint_uuid, name=body.name or "", comment=body.comment or ""
        ),
    )
    model = await master.models.get(name)
    context = await master.checkpoints.context([made.checkpoint.uuid], [model.owner, made.owner])
    return det.ModelVersionResponse(model_version=version_view(made, model, context))


@router.get("/api/v1/models/{model_name}/versions")
async def list_versions(
    model_name: ModelName,
    master: MasterDep,
    sort_by: Annotated[det.ModelVersionSortBy, Query(alias="sortBy")] = (
        det.ModelVersionSortBy.UNSPECIFIED
    ),
    order_by: Order = det.OrderBy.UNSPECIFIED,
    offset: Offset = 0,
    limit: Limit = 0,
) -> det.ModelVersionList:
    """The model and its versions, by number (or registration time), paged."""
    listed = await master.models.versions(await _name(master, model_name))
    context = await master.checkpoints.context(
        [v.checkpoint.uuid for v in listed.versions],
        [listed.model.owner, *(v.owner for v in listed.versions)],
    )
    versions = sorted(
        listed.versions,
        key=(
            (lambda v: (v.created_at, v.version))
            if sort_by == det.ModelVersionSortBy.CREATION_TIME
            else (lambda v: v.version)
        ),
        reverse=order_by == det.OrderBy.DESC,
    )
    page = det.paginate(len(versions), offset, limit)
    return det.ModelVersionList(
        model=model_view(listed.model, context),
        model_versions=[
            version_view(v, listed.model, context)
            for v in versions[page.start_index : page.end_index]
        ],
        pagination=page,
    )


@router.get("/api/v1/models/{model_name}/versions/{version}")
async def get_version(
    model_name: ModelName, version: VersionNumber, master: MasterDep
) -> det.ModelVersionResponse:
    name = await _name(master, model_name)
    found = await master.models.version(name, version)
    model = await master.models.get(name)
    context = await master.checkpoints.context([found.checkpoint.uuid], [model.owner, found.owner])
    return det.ModelVersionResponse(model_version=version_view(found, model, context))


@router.delete("/api/v1/models/{model_name}/versions/{version}")
async def delete_version(
    model_name: ModelName, version: VersionNumber, master: MasterDep, actor: ActorDep
) -> det.EmptyResponse:
    """Delete the version; its checkpoint stays."""
    await master.models.delete_version(actor, await _name(master, model_name), version)
    return det.EmptyResponse()


# -- conversion ----------------------------------------------------------------------------


def model_view(model: rest.Model, context: CheckpointContext) -> det.Model:
    return det.Model(
        id=model.id,
        name=model.name,
        description=model.description,
        labels=list(model.labels),
        creation_time=det.timestamp(model.created_at),
        last_updated_time=det.timestamp(model.updated_at),
        num_versions=model.versions,
        user_id=context.user_ids.get(model.owner, 0),
        username=model.owner,
    )


def version_view(
    version: rest.ModelVersion, model: rest.Model, context: CheckpointContext
) -> det.ModelVersion:
    trained = context.checkpoints.get(version.checkpoint.uuid)
    if trained is None:  # it cannot go while a version holds it: read again, it will be there
        raise NotFound(f"checkpoint {version.checkpoint.uuid} of {model.name} v{version.version}")
    return det.ModelVersion(
        id=version.id,
        model=model_view(model, context),
        version=version.version,
        checkpoint=checkpoint_view(trained),
        creation_time=det.timestamp(version.created_at),
        last_updated_time=det.timestamp(version.created_at),
        name=version.name,
        comment=version.comment,
        user_id=context.user_ids.get(version.owner),
        username=version.owner,
    )


_MODEL_KEYS: dict[det.ModelSortBy, Any] = {
    det.ModelSortBy.NAME: lambda m: (m.name.lower(), m.name),
    det.ModelSortBy.DESCRIPTION: lambda m: (m.description.lower(), m.name),
    det.ModelSortBy.CREATION_TIME: lambda m: (m.creation_time, m.id),
    det.ModelSortBy.LAST_UPDATED_TIME: lambda m: (m.last_updated_time, m.id),
    det.ModelSortBy.NUM_VERSIONS: lambda m: (m.num_versions, m.id),
    det.ModelSortBy.WORKSPACE: lambda m: m.id,
}


async def _name(master: Master, identifier: str) -> str:
    """The name of the model ``identifier`` names: itself, unless it is a number that is no
    model's name but a model's id."""
    if identifier.isascii() and identifier.isdigit():
        return await master.models.resolve(identifier)
    return identifier


async def _every_model(master: Master) -> list[rest.Model]:
    models: list[rest.Model] = []
    while True:
        page = await master.models.list(None, _LIST_PAGE, len(models))
        models += page.models
        if not page.models or len(models) >= page.pagination.total:
            return models


def _refuse_unmapped(
    metadata: dict[str, Any] | None, notes: str | None, labels: Sequence[str] | None
) -> None:
    if metadata:
        raise InvalidRequest(
            "assay's models and model versions have no metadata: leave metadata out (a "
            "model's description and labels say what it is)"
        )
    if notes:
        raise InvalidRequest(
            "assay's models and model versions have no notes: leave notes out (use the "
            "model's description, or a version's comment)"
        )
    if labels:
        raise InvalidRequest(
            "assay's model versions have no labels: leave labels out (the model has labels)"
        )


def _refuse_workspace(name: str | None, workspace_id: int | None) -> None:
    if name is not None and name.lower() not in _WORKSPACE_NAMES:
        raise InvalidRequest(
            f"assay has no workspaces: every model is in {det.DEFAULT_PROJECT!r}; leave out "
            f"the workspace (got {name!r})"
        )
    if workspace_id is not None and workspace_id not in (0, det.DEFAULT_PROJECT_ID):
        raise InvalidRequest(
            f"assay has no workspaces: every model is in workspace {det.DEFAULT_PROJECT_ID} "
            f"({det.DEFAULT_PROJECT}); leave out the workspace (got {workspace_id})"
        )
