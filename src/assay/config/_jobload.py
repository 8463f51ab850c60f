"""What the readers of job files share: validating raw data against a model with every problem
reported at once, as experiment configs are (``_load.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from assay.config._base import show
from assay.config._errors import invalid, problems_from
from assay.config._limits import TOO_DEEP, value_problems
from assay.errors import ErrorDetail

M = TypeVar("M", bound=BaseModel)


def validated(model: type[M], raw: Any, what: str, problems: Sequence[ErrorDetail] = ()) -> M:
    """``raw`` validated as ``model``; raises :class:`~assay.errors.InvalidConfig` naming
    ``what`` with ``problems`` (found before, such as bad overrides), the values no config may
    hold and every schema problem."""
    found = list(problems)
    if not isinstance(raw, dict):
        found.append(ErrorDetail("", f"must be a map of keys to values, got {show(raw)}"))
        raise invalid(what, found)
    values = value_problems(raw)
    if any(d.message == TOO_DEEP for d in values):
        # The validators walk by recursion: nothing deeper goes to them.
        raise invalid(what, found + values)
    try:
        cfg = model.model_validate(raw)
    except ValidationError as exc:
        # A problem found before (with a message of its own) stands for the schema's there.
        given = {d.path for d in found}
        schema = [d for d in problems_from(exc, model) if d.path not in given]
        reported = {d.path for d in schema}
        raise invalid(
            what, found + [d for d in values if d.path not in reported] + schema
        ) from None
    if found or values:
        raise invalid(what, found + values)
    return cfg
