"""``/api/v1/models``: the model registry. Every signed-in user reads every model; its owner
or an admin changes it."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query

from assay import rest
from assay.api._deps import SIGNED_IN, ActorDep, MasterDep

router = APIRouter(prefix="/api/v1/models", tags=["models"], dependencies=SIGNED_IN)

ModelName = Annotated[
    str,
    Path(max_length=128, pattern=rest.MODEL_NAME_PATTERN, description="The model's name."),
]
VersionNumber = Annotated[
    int, Path(ge=1, le=rest.INT_MAX, description="The version's number (1, 2, ...).")
]
_OWNER_ONLY: dict[int | str, dict[str, Any]] = {
    403: {"description": "Not the model's owner or an admin."}
}


@router.post("", status_code=201, responses={409: {"description": "The name is taken."}})
async def create_model(body: rest.ModelCreate, master: MasterDep, actor: ActorDep) -> rest.Model:
    """A new model without versions, owned by the caller."""
    return await master.models.create(actor, body)


@router.get("")
async def list_models(
    master: MasterDep,
    name: Annotated[
        str | None,
        Query(max_length=128, pattern=rest.NO_NUL, description="Only names containing this."),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=rest.INT_MAX)] = 0,
) -> rest.ModelList:
    """The models, by name."""
    return await master.models.list(name, limit, offset)


@router.get("/{name}")
async def get_model(name: ModelName, master: MasterDep) -> rest.Model:
    return await master.models.get(name)


@router.patch("/{name}", responses=_OWNER_ONLY)
async def change_model(
    name: ModelName, body: rest.ModelChange, master: MasterDep, actor: ActorDep
) -> rest.Model:
    """Change the model's description or labels."""
    return await master.models.change(actor, name, body)


@router.delete("/{name}", responses=_OWNER_ONLY)
async def delete_model(name: ModelName, master: MasterDep, actor: ActorDep) -> rest.ModelDeleted:
    """Delete the model and its versions. Their checkpoints stay in storage; a later garbage
    collection of their experiments may delete them."""
    return await master.models.delete(actor, name)


@router.post(
    "/{name}/versions",
    status_code=201,
    responses={
        **_OWNER_ONLY,
        400: {
            "model": rest.ErrorResponse,
            "description": "The checkpoint was (or is being) garbage-collected.",
        },
        404: {"model": rest.ErrorResponse, "description": "No such model or checkpoint."},
    },
)
async def register_version(
    name: ModelName, body: rest.ModelVersionCreate, master: MasterDep, actor: ActorDep
) -> rest.ModelVersion:
    """Register a checkpoint as the model's next version; garbage collection never deletes it
    while the version exists."""
    return await master.models.register(actor, name, body)


@router.get("/{name}/versions")
async def list_versions(name: ModelName, master: MasterDep) -> rest.ModelVersionList:
    """The model and its versions, oldest first."""
    return await master.models.versions(name)


@router.get("/{name}/versions/{number}")
async def get_version(
    name: ModelName, number: VersionNumber, master: MasterDep
) -> rest.ModelVersion:
    return await master.models.version(name, number)


@router.delete("/{name}/versions/{number}", responses=_OWNER_ONLY)
async def delete_version(
    name: ModelName, number: VersionNumber, master: MasterDep, actor: ActorDep
) -> rest.ModelVersion:
    """Delete the version (its owner, the model's owner or an admin); its checkpoint stays.
    The answer is the version as it was."""
    return await master.models.delete_version(actor, name, number)
