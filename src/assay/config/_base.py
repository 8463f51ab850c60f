"""The base every config model derives from: unknown keys refused, a null value counts as absent."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator


class ConfigModel(BaseModel):
    """A strict config section.

    Unknown keys are errors (a typo must not be silently ignored), and a key whose value is
    ``null`` is treated as if it were absent, as Determined's expconf does, so the field takes its
    default.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if v is not None}
        return data

    def to_json(self) -> dict[str, Any]:
        """The JSON form, as stored in the database and sent to trials."""
        return self.model_dump(mode="json", exclude_none=True, by_alias=True)


class OpenSection(BaseModel):
    """A section assay accepts for compatibility but does not act on (profiling, optimizations,
    integrations...): any keys pass through unchanged."""

    model_config = ConfigDict(extra="allow", frozen=True)
