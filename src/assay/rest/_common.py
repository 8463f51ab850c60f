"""What every resource shares: the model base, bounded integers, paging and the error shape."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

INT_MAX = 2**31 - 1
"""The largest integer every supported database keeps in an integer column (PostgreSQL's
``integer`` is 32 bits). Ids, offsets and step counts above it are refused with a 400 that names
the field, instead of failing in the database."""

DbInt = Annotated[int, Field(ge=0, le=INT_MAX)]
"""A non-negative integer that fits the database: an id, an offset, a step count."""

NO_NUL = r"^[^\x00]*$"
"""The pattern of a string the database can compare and store: PostgreSQL text holds no NUL
characters."""

DbText = Annotated[str, Field(pattern=NO_NUL)]
"""A string without NUL characters."""


Waiting = Annotated[
    str | None,
    Field(
        description="Why its queued work does not start, in one line (e.g. 'needs 4 slots a "
        "trial; the largest agent in pool 'default' has 2'); null when nothing of it waits."
    ),
]
"""The one field that explains a wait, on a job of the queue, an experiment and a trial."""


class Resource(BaseModel):
    """Base of every REST resource.

    Unknown fields are ignored, so an older client reads a newer master's answers. Schemas are
    built on first use: a command that reads one kind of resource builds only that one.
    """

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)


class Request(BaseModel):
    """Base of every request body: unknown fields and non-finite numbers are refused. Built on
    first use, as a resource is."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, defer_build=True)


def build_requests_when_made() -> None:
    """Build every request model when its class is made (and those made already now), in the
    process that serves them. FastAPI wraps each request body in a ``TypeAdapter`` with the
    body's name as its alias, and builds it under a filter for pydantic's warning that such an
    alias has no effect; a deferred model defers that build to the first request, outside the
    filter, where pydantic warned (``UnsupportedFieldAttributeWarning``, 'body') at every
    master's start. Clients keep deferring: a command builds only the models it sends."""
    pending: list[type[BaseModel]] = [Request]
    while pending:
        model = pending.pop()
        # Each class holds its own merged config: a subclass made later copies its base's.
        model.model_config["defer_build"] = False
        pending.extend(model.__subclasses__())


class Pagination(Resource):
    total: int = Field(description="How many match, over all pages.")
    limit: int
    offset: int


class ErrorDetail(Resource):
    path: str = Field(description="Dotted path of the bad field; empty for the whole request.")
    message: str


class ErrorBody(Resource):
    type: str = Field(description="The error's name, e.g. NotFound, InvalidConfig, Conflict.")
    message: str
    details: list[ErrorDetail] = Field(default_factory=list)


class ErrorResponse(Resource):
    """Every 4xx and 5xx answer: 400 invalid, 401 no or wrong token, 404 unknown, 409 wrong
    state, 413 too large."""

    error: ErrorBody
    """What :meth:`assay.errors.AssayError.to_json` writes; this model documents it."""
