"""An agent's WebSocket is read while its messages wait for the master's lock: its pings are
answered, and the messages are acted on, in order, once the lock is free. A real master served
by uvicorn on loopback, a real WebSocket client."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from websockets.asyncio.client import ClientConnection, connect

from assay.api import create_app
from assay.api._server import server_config
from assay.config import MasterConfig
from assay.db import Database, sqlite_url
from assay.master import Inbox, Master

TOKEN = "an-agent-token-for-this-test"


async def _served(master: Master, scenario: Any) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    # The master's own server settings (pings, compression), on a port of the test's.
    server = uvicorn.Server(server_config(create_app(master), master.settings))
    serving = asyncio.create_task(server.serve(sockets=[listener]))
    try:
        while not server.started:
            await asyncio.sleep(0.05)
        await scenario(f"ws://127.0.0.1:{port}/api/v1/agents/ws")
    finally:
        server.should_exit = True
        await serving
        listener.close()


async def _joined(url: str) -> ClientConnection:
    ws = await connect(url, ping_interval=None)
    hello = {"type": "hello", "agent_id": "a1", "token": TOKEN, "slots": [{"id": "0"}]}
    await ws.send(json.dumps(hello))
    welcome = json.loads(await ws.recv())
    assert welcome["type"] == "welcome", welcome
    # The client offers compression; the master declines it (agents' messages go as they are).
    assert ws.response is not None
    assert "Sec-WebSocket-Extensions" not in ws.response.headers
    return ws


def test_an_agents_pings_are_answered_while_its_exit_waits_for_the_lock(tmp_path: Path) -> None:
    db = Database(sqlite_url(tmp_path / "assay.db"))
    master = Master(MasterConfig(agent_token=TOKEN), db, tmp_path)

    async def scenario(url: str) -> None:
        ws = await _joined(url)
        try:
            async with master.core.lock:  # every transaction waits, the exits' too
                # Apart, as a busy agent's messages come: the server reads a message only once
                # the one before it was taken, so a second one left untaken stops its reading.
                for allocation_id in ("gone-1", "gone-2"):
                    exited = {"type": "exited", "allocation_id": allocation_id, "exit_code": 0}
                    await ws.send(json.dumps(exited))
                    await asyncio.sleep(0.3)
                pong = await ws.ping()
                await asyncio.wait_for(pong, timeout=10)
                # Not acted on yet: no acknowledgement while the lock is held.
                with pytest.raises(TimeoutError):
                    await asyncio.wait_for(ws.recv(), timeout=0.5)
            # The lock is free: both exits are acted on, in the order they came.
            acks = [json.loads(await asyncio.wait_for(ws.recv(), 10)) for _ in range(2)]
            assert acks == [
                {"type": "ack_exit", "allocation_id": "gone-1"},
                {"type": "ack_exit", "allocation_id": "gone-2"},
            ]
        finally:
            await ws.close()

    try:
        asyncio.run(_served(master, scenario))
    finally:
        db.dispose()


def test_an_inbox_acts_in_order_on_what_came_meanwhile_together_and_stops_at_a_failure() -> None:
    async def scenario() -> tuple[list[str], list[str]]:
        acted: list[str] = []
        taken: list[int] = []
        failures: list[str] = []
        gate = asyncio.Event()

        async def act(messages: list[dict[str, Any]]) -> None:
            taken.append(len(messages))
            for message in messages:
                if message["n"] == "first":
                    await gate.wait()
                if message["n"] == "bad":
                    raise RuntimeError("a bug")
                acted.append(message["n"])

        async def failed() -> None:
            failures.append("closed")

        inbox = Inbox("a1", act, failed)
        inbox.put({"n": "first"})
        await asyncio.sleep(0.05)
        for n in ("second", "bad", "never"):
            inbox.put({"n": n})  # none waits for the first, held at the gate
        await asyncio.sleep(0.05)
        assert acted == []
        gate.set()
        await inbox.drain()
        # The three that came while the first was acted on are given together.
        assert taken == [1, 3]
        return acted, failures

    assert asyncio.run(scenario()) == (["first", "second"], ["closed"])


def test_an_inbox_whose_connection_cannot_be_closed_still_drains() -> None:
    """A socket already gone refuses to be closed: the inbox still ends, so the connection's
    end is still recorded (an agent left connected would be given work)."""

    async def scenario() -> list[str]:
        acted: list[str] = []

        async def act(messages: list[dict[str, Any]]) -> None:
            raise RuntimeError("the database is away")

        async def failed() -> None:
            acted.append("close asked")
            raise RuntimeError("the socket is closed already")

        inbox = Inbox("a1", act, failed)
        inbox.put({"n": "exit"})
        await inbox.drain()  # returns: nothing of the failure escapes
        return acted

    assert asyncio.run(scenario()) == ["close asked"]
