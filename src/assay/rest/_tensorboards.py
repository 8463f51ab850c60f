"""TensorBoards: a TensorBoard over trials' uploaded event files, run as a zero-slot task and
served through the master at ``/proxy/<id>/``."""

from __future__ import annotations

from pydantic import Field

from assay.protocol import TaskState
from assay.rest._common import DbInt, Request, Resource

MAX_TRIALS = 1000
"""The most trials one TensorBoard shows."""


class TensorBoardRequest(Request):
    experiment_id: DbInt
    trial_ids: list[DbInt] = Field(
        default_factory=list,
        max_length=MAX_TRIALS,
        description="Trials of the experiment to show; empty: every trial of it.",
    )


class TensorBoard(Resource):
    id: int = Field(description="Its task id (`assay task logs ID` shows its output).")
    experiment_id: int
    trial_ids: list[int]
    state: TaskState
    user: str
    url: str = Field(
        description="Where the master serves it: a path under the master's address. A browser "
        "signs in once by adding `?token=<access token>`, which sets a cookie for this path."
    )
    ready: bool = Field(description="Its process has started and reserved its port.")
    message: str
    note: str = Field(
        default="",
        description="Set by the answer that starts it when none of its trials has written "
        "TensorBoard files yet (it shows them as they arrive).",
    )
    created_at: float
    ended_at: float | None


class TensorBoardList(Resource):
    tensorboards: list[TensorBoard]
