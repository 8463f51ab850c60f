"""The base every config model derives from: unknown keys refused, a null value counts as absent.

Cross-field checks (``a`` must not be set with ``b``...) are written as :meth:`ConfigModel.
_cross_checks` on the raw input rather than as pydantic "after" validators, so they are reported
together with the field errors of the same section instead of only once every field is valid.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NoReturn, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    ModelWrapValidatorHandler,
    ValidationError,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError
from pydantic_core.core_schema import ErrorType

Loc = tuple[str | int, ...]
"""Where a problem is, relative to the section being validated: ``("storage_path",)``."""

Problem = tuple[Loc, str]
"""A problem found by a config check: its location and a message for people."""

# The pydantic error type that carries our own messages; ``_errors.py`` prints ``message`` as is.
ERROR_TYPE = "assay"
# The error type of a tagged union whose tag key is missing or names no member.
TAG_ERROR_TYPE = "assay_tag"


def show(value: Any, limit: int = 60) -> str:
    """A short JSON-like rendering of a value for messages: ``"two"``, ``1.5``, ``[1, 2]``."""
    try:
        text = json.dumps(value, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def config_error(message: str) -> PydanticCustomError:
    """A pydantic error whose message is printed as is (raise it from a validator)."""
    return PydanticCustomError(ERROR_TYPE, "{message}", {"message": message})


def raise_problems(problems: list[Problem], data: Any, title: str = "config") -> NoReturn:
    """Raise several problems at once, each at its own location under the current field."""
    raise ValidationError.from_exception_data(
        title,
        [InitErrorDetails(type=config_error(msg), loc=loc, input=data) for loc, msg in problems],
    )


def _reraise_with(exc: ValidationError, problems: list[Problem], data: Any) -> NoReturn:
    details: list[InitErrorDetails] = []
    for err in exc.errors():
        ctx = err.get("ctx")
        if err["type"] in _BUILTIN_TYPES:
            detail = InitErrorDetails(type=err["type"], loc=err["loc"], input=err["input"])
            if ctx is not None:
                detail["ctx"] = ctx
        else:
            # A custom error: keep its type and context, and its message exactly as formatted.
            template = err["msg"].replace("{", "{{").replace("}", "}}")
            custom = PydanticCustomError(err["type"], template, ctx)
            detail = InitErrorDetails(type=custom, loc=err["loc"], input=err["input"])
        details.append(detail)
    details.extend(
        InitErrorDetails(type=config_error(msg), loc=loc, input=data) for loc, msg in problems
    )
    raise ValidationError.from_exception_data(exc.title, details)


_BUILTIN_TYPES = frozenset(get_args(ErrorType))


class _TaggedBy(Discriminator):
    # Its error context is a dict, which makes the dataclass's own hash fail; a union that
    # holds it (``X | None``) must be hashable.
    def __hash__(self) -> int:
        return id(self)


def tagged(key: str, tags: Mapping[str, str], what: str) -> Discriminator:
    """The discriminator of a union chosen by the value of ``key`` (``name``, ``type``).

    ``tags`` maps each accepted value to its member's tag; tags are written ``<...>`` so that
    error paths can drop them. ``what`` names a member in messages (``unknown searcher "x"``).
    """

    def pick(value: Any) -> str | None:
        chosen = value.get(key) if isinstance(value, dict) else getattr(value, key, None)
        return tags.get(chosen) if isinstance(chosen, str) else None

    return _TaggedBy(
        pick,
        custom_error_type=TAG_ERROR_TYPE,
        custom_error_message=f"unknown {what}",
        custom_error_context={"key": key, "what": what, "expected": ", ".join(tags)},
    )


class ConfigModel(BaseModel):
    """A strict config section.

    Unknown keys are errors (a typo must not be silently ignored), values are not coerced
    (``"2"`` is not an integer, as in Determined's JSON schemas), and a key whose value is
    ``null`` is treated as if it were absent, as Determined's expconf does, so the field takes
    its default. NaN and infinities are refused: JSON cannot carry them, and a search over them
    fails every trial.
    """

    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, strict=True, allow_inf_nan=False
    )

    @classmethod
    def _normalize(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Rewrite accepted shorthand forms of the raw input into the canonical one (after
        :meth:`_cross_checks`, which sees the input as written)."""
        return data

    @classmethod
    def _cross_checks(cls, data: dict[str, Any]) -> list[Problem]:
        """Problems that involve several keys, found on the raw input (types not yet checked)."""
        return []

    @model_validator(mode="wrap")
    @classmethod
    def _validate_section(cls, data: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
        if not isinstance(data, dict):
            return handler(data)
        data = {k: v for k, v in data.items() if v is not None}
        problems = cls._cross_checks(data)
        data = cls._normalize(data)
        try:
            result = handler(data)
        except ValidationError as exc:
            if problems:
                _reraise_with(exc, problems, data)
            raise
        if problems:
            raise_problems(problems, data, cls.__name__)
        return result

    def to_json(self) -> dict[str, Any]:
        """The JSON form, as stored in the database and sent to trials."""
        return self.model_dump(mode="json", exclude_none=True, by_alias=True)


class OpenSection(BaseModel):
    """A section assay accepts for compatibility but does not act on (optimizations,
    integrations...): any keys pass through unchanged, except that top-level nulls are dropped
    (null is absent), so the JSON form round-trips."""

    model_config = ConfigDict(extra="allow", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if v is not None}
        return data
