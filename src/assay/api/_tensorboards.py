"""``/api/v1/tensorboards``: start TensorBoard over an experiment's trials, list and kill them.
Each is a zero-slot task; the master serves it at the ``url`` it answers with (``/proxy/...``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from assay import rest
from assay.api._deps import SIGNED_IN, ActorDep, MasterDep

router = APIRouter(prefix="/api/v1/tensorboards", tags=["tensorboards"], dependencies=SIGNED_IN)

TensorBoardId = Annotated[
    int, Path(ge=0, le=rest.INT_MAX, description="A TensorBoard's (task's) id.")
]


@router.post("", status_code=201)
async def start_tensorboard(
    body: rest.TensorBoardRequest, master: MasterDep, actor: ActorDep
) -> rest.TensorBoard:
    """Start TensorBoard over the trials' uploaded event files (every trial of the experiment
    when ``trial_ids`` is empty); it queues like any zero-slot task."""
    return await master.tensorboards.start(actor, body)


@router.get("")
async def list_tensorboards(
    master: MasterDep,
    all_: Annotated[bool, Query(alias="all", description="Ended ones too.")] = False,
) -> rest.TensorBoardList:
    """TensorBoards, newest first; those not ended unless ``all``."""
    return await master.tensorboards.listing(active_only=not all_)


@router.get("/{tensorboard_id}")
async def get_tensorboard(tensorboard_id: TensorBoardId, master: MasterDep) -> rest.TensorBoard:
    return await master.tensorboards.get(tensorboard_id)


@router.post("/{tensorboard_id}/kill")
async def kill_tensorboard(
    tensorboard_id: TensorBoardId, master: MasterDep, actor: ActorDep
) -> rest.TensorBoard:
    """Stop it (its owner or an admin); one that has ended already is answered as it is."""
    return await master.tensorboards.kill(actor, tensorboard_id)
