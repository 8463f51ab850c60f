"""Notebooks: JupyterLab on a slot (or none), run as a task and served through the master at
``/proxy/<id>/`` to its owner and admins only."""

from __future__ import annotations

from pydantic import Field

from assay.protocol import TaskState
from assay.rest._common import Resource


class Notebook(Resource):
    id: int = Field(description="Its task id (`assay notebook logs ID` shows its output).")
    name: str
    state: TaskState
    user: str
    url: str = Field(
        description="Where the master serves it: a path under the master's address, for its "
        "owner and admins. A browser signs in once by adding `?token=<access token>`, which sets "
        "a cookie for this path."
    )
    ready: bool = Field(description="JupyterLab's process has started on its agent.")
    slots: int
    resource_pool: str
    idle_timeout: float | None = Field(
        description="Seconds of idleness after which it ends and frees its slot; null: never."
    )
    idle_type: str = Field(description="What counts as use (Determined's notebook_idle_type).")
    message: str
    notes: list[str] = Field(
        default_factory=list, description="What its config set that is not applied here."
    )
    created_at: float
    ended_at: float | None


class NotebookList(Resource):
    notebooks: list[Notebook]
