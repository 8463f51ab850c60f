"""An agent's messages, acted on in the order they came by a task of their own, so that the
socket they come on is always read.

The ASGI server stops reading a WebSocket after each message until the app asks for the next
one. Acted on inline, a message that waits for the master's lock (an exit, a start) held up
the agent's socket for as long: its pings went unanswered, and at 1,000 agents a busy master
dropped hundreds of them in a minute (benchmark B13), each then reconnecting and sending its
backlog again. Read at once and queued here, they are acted on exactly as before (one at a
time, in order), and a ping is answered whatever waits.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger(__name__)

Act = Callable[[list[dict[str, Any]]], Awaitable[None]]


class Inbox:
    """Messages of one agent's connection, acted on in order by ``act``, given every message
    that came while it acted on the ones before (so it may store an agent's log lines of many
    messages together). Should acting raise, the rest are dropped and ``failed`` is called (it
    closes the connection: the agent reconnects and sends what was not acknowledged again)."""

    def __init__(self, agent_id: str, act: Act, failed: Callable[[], Awaitable[None]]) -> None:
        self._agent_id = agent_id
        self._act = act
        self._failed = failed
        self._queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._task = asyncio.create_task(self._work())

    def put(self, message: dict[str, Any]) -> None:
        """Queue ``message`` to be acted on after those before it."""
        self._queue.put_nowait(message)

    async def drain(self) -> None:
        """Act on every message queued so far (the connection ended: what it brought before it
        ended counts, as an exit reported just before a drop), then stop."""
        self._queue.put_nowait(None)
        await self._task

    async def _work(self) -> None:
        while True:
            messages = [await self._queue.get()]
            while not self._queue.empty():
                messages.append(self._queue.get_nowait())
            ended = None in messages  # drained: nothing comes after it
            taken = [m for m in messages if m is not None]
            if taken:
                try:
                    await self._act(taken)
                except Exception:
                    log.exception("acting on a message of agent %s failed", self._agent_id)
                    try:
                        await self._failed()
                    except Exception as exc:  # a socket already gone cannot be closed again
                        log.info("closing agent %s's connection: %s", self._agent_id, exc)
                    return
            if ended:
                return
