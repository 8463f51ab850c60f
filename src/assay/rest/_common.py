"""What every resource shares: the model bases, bounded integers, a job's priority and weight,
and the error shape (paging is an answer read without pydantic: ``_plain``)."""

from __future__ import annotations

from typing import Annotated, Any, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
)
from pydantic_core import PydanticCustomError

from assay.rest._plain import WHY_WAITING

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


Waiting = Annotated[str | None, Field(description=WHY_WAITING)]
"""The one field that explains a wait, on a job of the queue, an experiment and a trial."""


MIN_PRIORITY = 1
MAX_PRIORITY = 99
"""A job's priorities, first to last: the scheduler's own (a test holds them equal)."""


def _priority(value: int | None) -> int | None:
    if value is not None and not MIN_PRIORITY <= value <= MAX_PRIORITY:
        raise PydanticCustomError(
            "priority",
            "must be from {low} (most urgent) to {high} (least urgent), got {value}",
            {"low": MIN_PRIORITY, "high": MAX_PRIORITY, "value": value},
        )
    return value


def _weight(value: float | None) -> float | None:
    if value is not None and value <= 0:
        says = "must be a number greater than 0, e.g. 2 or 0.5, got {value}"
        raise PydanticCustomError("weight", says, {"value": value})
    return value


# Checked with the queue's words, the schema stating the same bounds. None is a field left out
# (left_out refuses a null given).
Priority = Annotated[
    int | None,
    AfterValidator(_priority),
    WithJsonSchema({"type": "integer", "minimum": MIN_PRIORITY, "maximum": MAX_PRIORITY}),
]
"""A job's priority, 1 (first) to 99, when given."""

Weight = Annotated[
    float | None,
    AfterValidator(_weight),
    WithJsonSchema({"type": "number", "exclusiveMinimum": 0}),
]
"""A job's fair-share weight, above 0, when given."""


class Resource(BaseModel):
    """Base of every REST resource.

    Unknown fields are ignored, so an older client reads a newer master's answers. Schemas are
    built on first use: a command that reads one kind of resource builds only that one.
    """

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)


class Request(BaseModel):
    """Base of every request body: unknown fields, non-finite numbers and values of another
    JSON type are refused (``0`` is no boolean, ``false`` and ``"3"`` are no integers), as the
    schema says; an integer may be written ``3.0``, as JSON Schema's integers may. An enum field
    is given as its value (a string): mark it ``Lenient``. Built on first use, as a resource
    is."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True, defer_build=True)

    @field_validator("*", mode="before")
    @classmethod
    def _as_json_writes_them(cls, value: Any, info: ValidationInfo) -> Any:
        name = info.field_name
        if name is None:
            return value
        null_refused, holds_int = _checks(cls, name)
        if value is None and null_refused:
            raise PydanticCustomError("null", "must not be null: leave it out to keep what it is")
        if holds_int:
            return _integral(value)
        return value


_FIELD_CHECKS: dict[tuple[type, str], tuple[bool, bool]] = {}
"""Per request model and field: whether a null is refused, and whether its type has integers in
it. Asked for every field of every request (each of a large cluster's relayed metric reports):
the type's walk cost the master's event loop a tenth of its time, and reading the model's
fields a twentieth (pydantic's ``model_fields`` is a property), at 1,000 agents (B13)."""


def _checks(model: type[BaseModel], name: str) -> tuple[bool, bool]:
    key = (model, name)
    found = _FIELD_CHECKS.get(key)
    if found is None:
        field = model.model_fields[name]
        found = _FIELD_CHECKS[key] = (
            field.json_schema_extra is _no_default,
            _has_int(field.annotation),
        )
    return found


def _has_int(annotation: Any) -> bool:
    """Whether a field's type has integers in it (``int | None``, ``list[int]``...)."""
    if annotation is int:
        return True
    return any(_has_int(arg) for arg in get_args(annotation))


def _integral(value: Any) -> Any:
    """``value`` with each float that is a whole number made an int, inside lists and maps."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_integral(v) for v in value]
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    return value


def _no_default(schema: dict[str, Any]) -> None:
    # The mark of a left_out field, too.
    schema.pop("default", None)


def left_out(description: str) -> Any:
    """A request field that may be left out but not given as null: declare it
    ``T | SkipJsonSchema[None] = left_out("...")``; its schema has neither null nor a null
    default, and a null is refused naming the field."""
    return Field(default=None, description=description, json_schema_extra=_no_default)


Lenient = Strict(False)
"""On an enum field of a :class:`Request`: its value as JSON gives it (a strict field would
take only the enum's own members, which JSON has none of)."""


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
