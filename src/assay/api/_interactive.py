"""``/api/v1/notebooks`` and ``/api/v1/shells``: start JupyterLab or sshd on a slot (or none)
from a Determined notebook or shell config and a context directory, list, read and kill them.
Each is a task (its logs are ``/api/v1/tasks/<id>/logs``). The master serves a notebook at the
``url`` it answers with (``/proxy/...``), and tunnels SSH to a shell
(``/api/v1/shells/<id>/tunnel``, a WebSocket carrying the TCP stream), to its owner and admins
only."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, File, Form, Path, Query, UploadFile, WebSocket
from fastapi.responses import JSONResponse

from assay import rest
from assay.api._deps import SIGNED_IN, ActorDep, MasterDep, bearer_token
from assay.api._proxy import both_ways, deny, unavailable
from assay.api._upload import UploadRoute, read_context, require_multipart
from assay.config import load_notebook_config, load_shell_config
from assay.errors import AssayError
from assay.master import Master

router = APIRouter(
    prefix="/api/v1/notebooks",
    tags=["notebooks"],
    dependencies=SIGNED_IN,
    route_class=UploadRoute,
)
shells = APIRouter(
    prefix="/api/v1/shells", tags=["shells"], dependencies=SIGNED_IN, route_class=UploadRoute
)
tunnel = APIRouter(prefix="/api/v1/shells", include_in_schema=False)
"""The tunnel's WebSocket: it checks its caller itself (before accepting)."""

_Route = TypeVar("_Route", bound=Callable[..., Any])
NotebookId = Annotated[int, Path(ge=0, le=rest.INT_MAX, description="A notebook's (task's) id.")]
ShellId = Annotated[int, Path(ge=0, le=rest.INT_MAX, description="A shell's (task's) id.")]
Overrides = Annotated[list[str], Form(default_factory=list, description="`key.path=value`.")]
Context = Annotated[
    UploadFile | None,
    File(
        description="Optional: a directory as tar.gz, the working directory.",
        json_schema_extra={"format": "binary"},
    ),
]


def _start_route(on: APIRouter) -> Callable[[_Route], _Route]:
    """``POST ""`` of ``on``: a multipart body with one file at most (the context)."""
    return on.post(
        "",
        status_code=201,
        dependencies=[Depends(require_multipart)],
        form_limits={"max_files": 1},
        responses={413: {"description": "The body or the context archive is over its limit."}},
    )


_CHUNK = 64 * 1024


@_start_route(router)
async def start_notebook(
    master: MasterDep,
    actor: ActorDep,
    overrides: Overrides,
    context: Context = None,
    config: Annotated[
        str, Form(description="A Determined notebook config (YAML); empty: every default.")
    ] = "",
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


@_start_route(shells)
async def start_shell(
    master: MasterDep,
    actor: ActorDep,
    overrides: Overrides,
    context: Context = None,
    config: Annotated[
        str, Form(description="A Determined shell config (YAML); empty: every default.")
    ] = "",
) -> rest.Shell:
    """Start sshd (one slot unless `resources.slots` says otherwise) for an SSH session through
    the master; it queues like any job and lasts until it is killed."""
    spec = await asyncio.to_thread(
        load_shell_config, config, filename="config", overrides=tuple(overrides)
    )
    data = None if context is None else await read_context(context)
    return await master.shells.start(actor, spec, data)


@shells.get("")
async def list_shells(
    master: MasterDep,
    all_: Annotated[bool, Query(alias="all", description="Ended ones too.")] = False,
) -> rest.ShellList:
    """Shells, newest first; those not ended unless ``all``."""
    return await master.shells.listing(active_only=not all_)


@shells.get("/{shell_id}")
async def get_shell(shell_id: ShellId, master: MasterDep) -> rest.Shell:
    return await master.shells.get(shell_id)


@shells.post("/{shell_id}/kill")
async def kill_shell(shell_id: ShellId, master: MasterDep, actor: ActorDep) -> rest.Shell:
    """Stop it (its owner or an admin): sshd and every session end."""
    return await master.shells.kill(actor, shell_id)


@shells.get("/{shell_id}/key")
async def shell_key(shell_id: ShellId, master: MasterDep, actor: ActorDep) -> rest.ShellKey:
    """The private key its sshd lets in and sshd's host key (its owner and admins only)."""
    return await master.shells.key(actor, shell_id)


@tunnel.websocket("/{shell_id}/tunnel")
async def shell_tunnel(ws: WebSocket, shell_id: ShellId) -> None:
    """The shell's sshd as a byte stream in binary messages, both ways, for its owner's ssh
    (``assay shell tunnel ID`` is its ProxyCommand)."""
    master: Master = ws.app.state.master
    try:
        actor = await master.users.authenticate(bearer_token(ws.headers.get("authorization")))
        target = await master.tasks.proxy_target(actor, shell_id, tunnel=True)
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(target.host, target.port), timeout=10
        )
    except AssayError as exc:
        await deny(ws, JSONResponse(exc.to_json(), status_code=exc.status))
        return
    except (OSError, TimeoutError) as exc:
        message = f"shell {shell_id}'s sshd does not answer yet: {exc}; try again shortly"
        await deny(ws, unavailable(message))
        return
    await ws.accept()

    async def down() -> None:
        while chunk := await reader.read(_CHUNK):
            await ws.send_bytes(chunk)

    async def up() -> None:
        while True:
            message = await ws.receive()
            if message["type"] == "websocket.disconnect":
                return
            data = message.get("bytes") or (message.get("text") or "").encode()
            writer.write(data)
            await writer.drain()

    try:
        await both_ways(ws, down(), up())
    finally:
        writer.close()
