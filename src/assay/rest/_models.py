"""The model registry: named models whose versions each hold one checkpoint."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from assay.rest._common import NO_NUL, Request, Resource
from assay.rest._plain import Pagination
from assay.rest._trials import Checkpoint

MODEL_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$"

ModelName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=128,
        pattern=MODEL_NAME_PATTERN,
        description="Letters, digits and `_.+-`, starting with a letter or digit; at most 128 "
        "(it is part of the model's URL).",
    ),
]
_Description = Annotated[str, Field(max_length=8192, pattern=NO_NUL)]
_Label = Annotated[str, Field(min_length=1, max_length=256, pattern=NO_NUL)]
_Labels = Annotated[list[_Label], Field(max_length=100)]


class Model(Resource):
    id: int
    name: str
    description: str
    labels: list[str]
    owner: str = Field(description="Who created it: they (and admins) change it.")
    versions: int = Field(description="How many versions it has.")
    latest_version: int | None = Field(description="The number of its newest version, if any.")
    created_at: float
    updated_at: float = Field(description="When it or its versions last changed.")


class ModelList(Resource):
    models: list[Model] = Field(description="By name.")
    pagination: Pagination


class ModelCreate(Request):
    name: ModelName
    description: _Description = ""
    labels: _Labels = Field(default_factory=list)


class ModelChange(Request):
    """Set exactly the fields to change."""

    description: _Description | None = None
    labels: _Labels | None = Field(default=None, description="Replace the model's labels.")


class ModelVersion(Resource):
    """One version of a model: the checkpoint it holds, which garbage collection never
    deletes while the version exists."""

    id: int
    model: str = Field(description="The model's name.")
    version: int = Field(description="1, 2, ... in the order they were registered; never reused.")
    checkpoint: Checkpoint
    name: str
    comment: str
    owner: str = Field(description="Who registered it.")
    created_at: float


class ModelVersionCreate(Request):
    """Register a checkpoint as the model's next version."""

    checkpoint_uuid: Annotated[str, Field(min_length=1, max_length=64, pattern=NO_NUL)]
    name: Annotated[str, Field(max_length=256, pattern=NO_NUL)] = ""
    comment: _Description = ""


class ModelVersionList(Resource):
    model: Model
    versions: list[ModelVersion] = Field(description="Oldest first.")


class ModelDeleted(Resource):
    """What deleting a model removed: the model and its versions. Their checkpoints stay in
    storage; a later garbage collection of their experiments (``set gc-policy``) may delete
    them."""

    name: str
    versions: int = Field(description="How many versions were deleted with it.")
