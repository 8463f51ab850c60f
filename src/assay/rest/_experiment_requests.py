"""Changing an experiment, and making one from another: the request bodies (pydantic models,
checked against the config's limits)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from assay.rest._common import NO_NUL, DbInt, Priority, Request, Weight, left_out

# The config's own limits (assay.config's MAX_NAME, MAX_DESCRIPTION, MAX_LABELS): a name set
# later fits where a submitted one does.
_Name = Annotated[str, Field(min_length=1, max_length=256, pattern=NO_NUL)]


class ExperimentResources(Request):
    """A change of an experiment: its share of the cluster, its name, description or labels.
    Every field given is applied, or none when one is refused."""

    # Left out, priority and weight stay as they are; null is no priority or weight (refused).
    priority: Priority = left_out("1 (first) to 99; priority pools.")
    weight: Weight = left_out("Above 0; fair-share pools.")
    max_slots: DbInt | None = Field(
        default=None, description="At most this many slots at once; null: no limit."
    )
    name: _Name | None = Field(default=None, description="A new name (not empty).")
    description: Annotated[str, Field(max_length=8192, pattern=NO_NUL)] | None = Field(
        default=None, description="A new description (may be empty)."
    )
    labels: Annotated[list[_Name], Field(max_length=100)] | None = Field(
        default=None, description="The experiment's labels, replacing the ones it has."
    )


_Override = Annotated[str, Field(max_length=65536, pattern=NO_NUL)]


class ExperimentFork(Request):
    """A new experiment from another's config and context, with overrides applied."""

    overrides: Annotated[list[_Override], Field(max_length=1000)] = Field(
        default=[], description="`key.path=value`, as `create --config` takes them."
    )
    activate: bool = Field(default=True, description="False creates it PAUSED.")


class ExperimentContinue(ExperimentFork):
    """A new experiment whose one trial trains a trial of an ended experiment further, from its
    latest checkpoint, with the same hyperparameters (give a larger ``searcher.max_length`` in
    ``overrides``)."""

    trial_id: DbInt | None = Field(
        default=None, description="The trial to continue; needed when the experiment has several."
    )
