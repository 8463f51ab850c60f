"""The cluster: master info, agents (and their WebSocket), resource pools, contexts for agents."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter, WebSocket, WebSocketDisconnect
from fastapi.responses import Response
from sqlalchemy.orm import Session

import assay
from assay import rest
from assay.api import _serialize as out
from assay.api._deps import ContextId, MasterDep
from assay.db import Context
from assay.db import _queries as q
from assay.errors import AssayError, NotFound
from assay.master import Master

log = logging.getLogger(__name__)

router = APIRouter(prefix="/api/v1", tags=["cluster"])


@router.get("/master")
async def master_info(master: MasterDep) -> rest.MasterInfo:
    return rest.MasterInfo(
        version=assay.__version__,
        cluster_id=master.cluster_id,
        started_at=master.started_at,
        database="sqlite" if master.db.is_sqlite else "postgresql",
    )


@router.get("/agents")
async def list_agents(master: MasterDep) -> rest.AgentList:
    def read(session: Session) -> rest.AgentList:
        used: dict[str, set[str]] = {}
        for alloc in allocations.live(session):
            for agent_id, slots in (alloc.slots or {}).items():
                used.setdefault(agent_id, set()).update(str(s) for s in slots)
        return rest.AgentList(
            agents=[
                out.agent(
                    a,
                    connected=master.hub.is_connected(a.id),
                    used_slots=used.get(a.id, set()),
                )
                for a in agents.registered(session)
            ]
        )

    return await master.db.run(read)


@router.get("/resource-pools")
async def list_pools(master: MasterDep) -> rest.ResourcePoolList:
    views = master.hub.connected_views()
    names = [p.pool_name for p in master.settings.resource_pools if p.provider is not None]

    def read(session: Session) -> dict[str, list[dict[str, Any]]]:
        return {
            name: [instance_json(row) for row in instances.of_pool(session, name, None)]
            for name in names
        }

    by_pool = await master.db.run(read)
    pools = []
    for pool in master.settings.resource_pools:
        agents = [a for a in views if a.pool == pool.pool_name]
        pools.append(
            rest.ResourcePool(
                name=pool.pool_name,
                description=pool.description,
                scheduler=pool.scheduler.type,
                preemption=pool.scheduler.preemption,
                agents=len(agents),
                slots=sum(len(a.slots) for a in agents),
                instances=[
                    rest.Instance.model_validate(i) for i in instances.get(pool.pool_name, [])
                ],
            )
        )
    return rest.ResourcePoolList(resource_pools=pools)


_GZIP = {
    "description": "The context directory as uploaded (tar.gz).",
    "content": {"application/gzip": {"schema": {"type": "string", "format": "binary"}}},
}


@router.get("/contexts/{context_id}", response_class=Response, responses={200: _GZIP})
async def get_context(context_id: ContextId, master: MasterDep) -> Response:
    def read(session: Session) -> bytes:
        return contexts.require(session, context_id).data

    data = await master.db.run(read)
    return Response(content=data, media_type="application/gzip")


@router.websocket("/agents/ws")
async def agent_socket(ws: WebSocket) -> None:
    master: Master = ws.app.state.master
    await ws.accept()
    try:
        hello = await ws.receive_json()
    except WebSocketDisconnect:
        return
    if not isinstance(hello, dict) or hello.get("type") != "hello":
        await ws.close(code=1002, reason="the first message must be a hello")
        return
    try:
        master.check_agent(hello)
    except AssayError as exc:
        log.warning("refused an agent: %s", exc.message)
        await ws.send_json({"type": "error", "message": exc.message})
        await ws.close(code=1008, reason=exc.message[:120])
        return
    conn = await master.agent_connected(hello, ws.send_json)
    agent_id = conn.view.id
    log.info("agent %s connected with %d slots", agent_id, len(conn.view.slots))
    try:
        while True:
            msg = await ws.receive_json()
            if isinstance(msg, dict):
                await master.on_agent_message(agent_id, msg)
    except WebSocketDisconnect:
        pass
    finally:
        log.info("agent %s disconnected", agent_id)
        await master.agent_disconnected(conn)
