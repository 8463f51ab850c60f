"""``/api/v1/notebooks``: start JupyterLab on a slot (or none) from a Determined notebook config
and a context directory, list, read and kill them. Each is a task (its logs are
``/api/v1/tasks/<id>/logs``); the master serves it at the ``url`` it answers with
(``/proxy/...``), to its owner and admins only."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Depends, File, Form, Path, Query, UploadFile

from assay import rest
from assay.api._deps import SIGNED_IN, ActorDep, MasterDep
from assay.api._upload import UploadRoute, read_context, require_multipart
from assay.config import load_notebook_config

router = APIRouter(
    prefix="/api/v1/notebooks",
    tags=["notebooks"],
    dependencies=SIGNED_IN,
    route_class=UploadRoute,
)

NotebookId = Annotated[int, Path(ge=0, le=rest.INT_MAX, description="A notebook's (task's) id.")]


@router.post(
    "",
    status_code=201,
    dependencies=[Depends(require_multipart)],
    form_limits={"max_files": 1},
    responses={413: {"description": "The body or the context archive is over its limit."}},
)
async def start_notebook(
    master: MasterDep,
    actor: ActorDep,
    overrides: Annotated[list[str], Form(default_factory=list, description="`key.path=value`.")],
    config: Annotated[
        str,
        Form(description="A Determined notebook config (YAML); empty: every default."),
    ] = "",
    context: Annotated[
        UploadFile | None,
        File(
            description="Optional: a directory as tar.gz, JupyterLab's working directory.",
            json_schema_extra={"format": "binary"},
        ),
    ] = None,
) -> rest.Notebook:
    """Start JupyterLab (one slot unless `resources.slots` says otherwise); it queues like any
    job, and ends by itself after `idle_timeout` of idleness."""
    spec = await asyncio.to_thread(
        load_notebook_config, config, filename="config", overrides=tuple(overrides)
    )
    data = None if context is None else await read_context(context)
    return await master.notebooks.start(actor, spec, data)


@router.get("")
async def list_notebooks(
    master: MasterDep,
    all_: Annotated[bool, Query(alias="all", description="Ended ones too.")] = False,
) -> rest.NotebookList:
    """Notebooks, newest first; those not ended unless ``all``."""
    return await master.notebooks.listing(active_only=not all_)


@router.get("/{notebook_id}")
async def get_notebook(notebook_id: NotebookId, master: MasterDep) -> rest.Notebook:
    return await master.notebooks.get(notebook_id)


@router.post("/{notebook_id}/kill")
async def kill_notebook(
    notebook_id: NotebookId, master: MasterDep, actor: ActorDep
) -> rest.Notebook:
    """Stop it (its owner or an admin); one that has ended already is answered as it is."""
    return await master.notebooks.kill(actor, notebook_id)
