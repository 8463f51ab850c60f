"""The cluster: master info, agents (and their WebSocket), resource pools, contexts for agents."""

from __future__ import annotations

import json
import logging
from typing import Annotated, Any

from fastapi import APIRouter, Query, WebSocket, WebSocketDisconnect
from fastapi.responses import FileResponse, Response
from starlette.background import BackgroundTask
from starlette.websockets import WebSocketDisconnected

from assay import rest
from assay.api._deps import SIGNED_IN, ActorDep, ContextId, Credentials, MasterDep
from assay.errors import AssayError, Forbidden
from assay.master import MASTER_LOG_KEEP, Actor, Inbox, Master, effective_config
from assay.protocol import Hello, Refusal

log = logging.getLogger(__name__)

router = APIRouter(prefix="/api/v1", tags=["cluster"])


@router.get("/master")
async def master_info(master: MasterDep) -> rest.MasterInfo:
    """The master's version and identity; open to all, as its health check."""
    return master.reads.info()


def _admin_only(actor: Actor, what: str) -> None:
    if not actor.admin:
        raise Forbidden(f"only an admin may read the master's {what} (you are {actor.username})")


@router.get("/master/config")
async def master_config(master: MasterDep, actor: ActorDep) -> rest.MasterConfigView:
    """The settings the master runs with (defaults filled in), secrets masked; admins only."""
    _admin_only(actor, "config")
    return rest.MasterConfigView(
        config=effective_config(master.settings, master.core.db.url, master.assay_home)
    )


BACKUP_FILE: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The database's copy: a SQLite database file, or pg_dump's custom "
        "format for PostgreSQL (the file name says which).",
        "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
    }
}


@router.get("/master/backup", response_class=FileResponse, responses=BACKUP_FILE)
async def master_backup(master: MasterDep, actor: ActorDep) -> FileResponse:
    """A consistent copy of the cluster's whole database, taken while it runs: experiments,
    trials, metrics, the checkpoint index, users, tokens and jobs (checkpoint files stay in
    checkpoint storage). `assay master restore` puts it under a new master. Admins only."""
    _admin_only(actor, "database")
    backup = await master.backup()
    return FileResponse(
        backup.path,
        media_type="application/octet-stream",
        filename=backup.filename,
        headers={"X-Assay-Backup-Format": backup.format},
        background=BackgroundTask(backup.path.unlink, missing_ok=True),
    )


@router.get("/master/logs")
async def master_logs(
    master: MasterDep,
    actor: ActorDep,
    after: Annotated[
        int, Query(ge=0, le=rest.INT_MAX, description="Only lines with an id above this.")
    ] = 0,
    limit: Annotated[int, Query(ge=1, le=MASTER_LOG_KEEP)] = MASTER_LOG_KEEP,
) -> rest.MasterLogPage:
    """The master's recent log lines (the last 10,000 since it started), oldest first;
    admins only."""
    _admin_only(actor, "log")
    return rest.MasterLogPage(lines=master.recent_log.after(after, limit))


@router.get("/agents", dependencies=SIGNED_IN)
async def list_agents(master: MasterDep) -> rest.AgentList:
    return await master.reads.agents()


@router.get("/resource-pools", dependencies=SIGNED_IN)
async def list_pools(master: MasterDep) -> rest.ResourcePoolList:
    return await master.reads.resource_pools()


@router.post("/master/drain")
async def drain(
    body: rest.DrainRequest, master: MasterDep, credentials: Credentials
) -> rest.DrainStatus:
    """Stop the cluster's work for a shutdown (`assay down`): nothing new starts (for a minute
    after the last such request), and every
    running trial is asked to checkpoint and exit; it is queued again with no restart counted
    and resumes from its latest checkpoint when a master starts again. Answers once no trial
    runs, or after `wait_seconds`, with the trials still running. For an admin, or with the
    cluster's agent token (which the machine running the cluster holds)."""
    token = credentials.credentials if credentials else None
    if not master.agents.is_agent_token(token):
        actor = await master.users.authenticate(token)
        if not actor.admin:
            raise Forbidden("only an admin may stop the cluster's work")
    return await master.drain.drain(body.wait_seconds)


_GZIP = {
    "description": "The context directory as uploaded (tar.gz).",
    "content": {"application/gzip": {"schema": {"type": "string", "format": "binary"}}},
}


@router.get("/contexts/{context_id}", response_class=Response, responses={200: _GZIP})
async def get_context(
    context_id: ContextId, master: MasterDep, credentials: Credentials
) -> Response:
    """A context archive, for a signed-in user or for an agent (with the agent token)."""
    token = credentials.credentials if credentials else None
    if not master.agents.is_agent_token(token):
        await master.users.authenticate(token)
    data = await master.reads.context(context_id)
    return Response(content=data, media_type="application/gzip")


@router.websocket("/agents/ws")
async def agent_socket(ws: WebSocket) -> None:
    master: Master = ws.app.state.master
    gateway = master.agents
    await ws.accept()
    try:
        hello = await ws.receive_json()
    except WebSocketDisconnect:
        return
    if not isinstance(hello, dict) or hello.get("type") != Hello.type:
        await ws.close(code=1002, reason="the first message must be a hello")
        return
    try:
        conn, unlink = await master.pools.join(gateway.check(hello), ws.send_json)
    except (WebSocketDisconnect, WebSocketDisconnected):
        # Gone before its welcome (an agent that gave up waiting): it reconnects, as after
        # any drop; nothing of it was linked.
        log.info("agent %s disconnected before its welcome", hello.get("agent_id"))
        return
    except AssayError as exc:
        log.warning("refused an agent: %s", exc.message)
        await ws.send_json(Refusal(exc.message).to_dict())
        await ws.close(code=1008, reason=exc.message[:120])
        return
    agent_id = conn.view.id
    log.info("agent %s connected with %d slots", agent_id, len(conn.view.slots))

    async def failed() -> None:
        await ws.close(code=1011, reason="the master could not act on a message; reconnect")

    # Read at once, acted on in order by the inbox's task: the socket is read (and its pings
    # answered) while a message waits for the master's lock.
    inbox = Inbox(agent_id, lambda msgs: gateway.on_messages(agent_id, msgs), failed)
    try:
        while True:
            text = await ws.receive_text()
            try:
                msg = json.loads(text)
            except ValueError:
                log.warning("agent %s sent a message that is not JSON: %.200r", agent_id, text)
                continue
            if isinstance(msg, dict):
                inbox.put(msg)
    except (WebSocketDisconnect, WebSocketDisconnected):
        # The second: a send to the agent (an acknowledgement) found it gone, and the next
        # receive is refused on a socket already marked closed. Both are a disconnect.
        pass
    finally:
        log.info("agent %s disconnected", agent_id)
        try:
            # What came before the drop counts (an exit reported just before it).
            await inbox.drain()
        finally:
            # Whatever acting on it raised: an agent left connected would be given work.
            unlink()
            await gateway.disconnected(conn)
