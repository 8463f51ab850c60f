"""The model registry as Determined's clients read and change it (``v1Model``,
``v1ModelVersion`` and the requests of ``det model`` and the SDK's ``Model``).

assay's models have a name, a description, labels and versions; Determined's also have
metadata, notes and a workspace. Every model is in the one workspace Determined's clients
know without workspaces (``Uncategorized``, id 1, where every experiment is too); metadata
and notes are always empty, and a request that sets them is refused, saying so."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import Field

from assay.rest.determined._checkpoints import Checkpoint
from assay.rest.determined._common import DetRequest, DetResource, Pagination
from assay.rest.determined._experiments import DEFAULT_PROJECT_ID


class ModelSortBy(StrEnum):
    """``v1GetModelsRequestSortBy``."""

    UNSPECIFIED = "SORT_BY_UNSPECIFIED"
    NAME = "SORT_BY_NAME"
    DESCRIPTION = "SORT_BY_DESCRIPTION"
    CREATION_TIME = "SORT_BY_CREATION_TIME"
    LAST_UPDATED_TIME = "SORT_BY_LAST_UPDATED_TIME"
    NUM_VERSIONS = "SORT_BY_NUM_VERSIONS"
    WORKSPACE = "SORT_BY_WORKSPACE"


class ModelVersionSortBy(StrEnum):
    """``v1GetModelVersionsRequestSortBy``."""

    UNSPECIFIED = "SORT_BY_UNSPECIFIED"
    VERSION = "SORT_BY_VERSION"
    CREATION_TIME = "SORT_BY_CREATION_TIME"


class Model(DetResource):
    """``v1Model``."""

    id: int
    name: str
    description: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict, description="Always empty.")
    labels: list[str] = Field(default_factory=list)
    notes: str = Field(default="", description="Always empty.")
    creation_time: str = Field(description="RFC 3339, UTC.")
    last_updated_time: str = Field(description="When it or its versions last changed.")
    num_versions: int
    user_id: int = Field(description="Its owner's id (0 if that user is gone).")
    username: str
    archived: bool = False
    workspace_id: int = DEFAULT_PROJECT_ID


class ModelVersion(DetResource):
    """``v1ModelVersion``."""

    id: int
    model: Model
    version: int
    checkpoint: Checkpoint
    creation_time: str
    last_updated_time: str
    name: str = ""
    comment: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict, description="Always empty.")
    labels: list[str] = Field(default_factory=list, description="Always empty.")
    notes: str = Field(default="", description="Always empty.")
    user_id: int | None = None
    username: str | None = None


class ModelResponse(DetResource):
    """One model: ``GET``, ``POST`` and ``PATCH`` of a model (``v1GetModelResponse``,
    ``v1PostModelResponse``, ``v1PatchModelResponse``) answer this shape."""

    model: Model


class ModelList(DetResource):
    """``GET /api/v1/models`` (``v1GetModelsResponse``)."""

    models: list[Model]
    pagination: Pagination


class ModelVersionResponse(DetResource):
    """One version: ``GET`` (``v1GetModelVersionResponse``) and ``POST``
    (``v1PostModelVersionResponse``)."""

    model_version: ModelVersion


class ModelVersionList(DetResource):
    """``GET /api/v1/models/{modelName}/versions`` (``v1GetModelVersionsResponse``)."""

    model: Model
    model_versions: list[ModelVersion]
    pagination: Pagination


class EmptyResponse(DetResource):
    """What deleting a model or a version answers (an empty object)."""


_Text = Annotated[str, Field(max_length=8192)]
_Label = Annotated[str, Field(max_length=256)]
_Labels = Annotated[list[_Label], Field(max_length=100)]


class PatchModel(DetRequest):
    """``PATCH /api/v1/models/{modelName}`` (``v1PatchModel``): the fields to change."""

    name: Annotated[str, Field(max_length=128)] | None = None
    description: _Text | None = None
    labels: _Labels | None = None
    metadata: dict[str, Any] | None = None
    notes: _Text | None = None
    workspace_name: Annotated[str, Field(max_length=256)] | None = None
    workspace_id: int | None = None


class PostModel(PatchModel):
    """``POST /api/v1/models`` (``v1PostModelRequest``): a model's fields, its name required;
    the SDK sends every field, unset ones as null."""

    name: Annotated[str, Field(min_length=1, max_length=128)]


class PostModelVersion(DetRequest):
    """``POST /api/v1/models/{modelName}/versions`` (``v1PostModelVersionRequest``): the
    model is the one the path names (the body repeats it, or leaves it out)."""

    checkpoint_uuid: Annotated[str, Field(min_length=1, max_length=64)]
    model_name: Annotated[str, Field(max_length=128)] | None = None
    name: Annotated[str, Field(max_length=256)] | None = None
    comment: _Text | None = None
    labels: _Labels | None = None
    metadata: dict[str, Any] | None = None
    notes: _Text | None = None
