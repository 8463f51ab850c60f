"""The agent's relay of its trials' metric reports and preemptions
(:mod:`assay.protocol._relay`).

Trials hand their batches to a local socket. A batch goes to the master at once when no message
went in the last ``FLUSH_SECONDS``; what comes in sooner gathers until then and goes in one
:class:`RelayedReports` message. Each trial is answered when the master has stored its batch.
While the master is away the batches wait, and those sent without an answer are sent again once
it is back: the master stores a repeated report once.

A trial's preemption watch waits on the same socket for the master's :class:`Preempt` of its
allocation, which the master sends again after every reconnect while it holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from assay.errors import InvalidRequest
from assay.protocol import (
    SEND_IT_YOURSELF,
    PreemptionWatch,
    RelayedBatch,
    RelayedReports,
    RelayOutcome,
    ReportsAck,
)

log = logging.getLogger(__name__)

FLUSH_SECONDS = 0.2
"""The least time between two messages of reports: what comes in sooner gathers into the next,
so that the master gets one message where it would have had one request per trial. A batch
that finds the last message older goes at once: each trial's last report, which its process
waits for before it exits, waited up to this long before (B1: a fifth of a second a trial)."""
MAX_BATCHES = 1000
"""The most batches one message carries."""
MAX_LINE = 2**24
"""The longest request a trial may send (a reporter's batch is at most 1,000 reports)."""


@dataclass
class _Waiting:
    batch: RelayedBatch
    answer: asyncio.Future[RelayOutcome] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class ReportRelay:
    """Carries trials' metric reports to the master over the agent's connection."""

    def __init__(self, send: Callable[[RelayedReports], Awaitable[bool]]) -> None:
        self._send = send
        self.address = f"@assay-relay-{secrets.token_hex(8)}"
        """What trials are given in ``ASSAY_AGENT_RELAY``: an abstract socket's name, so no
        file's path can be too long for a socket or be left behind."""
        self._server: asyncio.AbstractServer | None = None
        self._waiting: list[_Waiting] = []
        self._sent: dict[int, list[_Waiting]] = {}
        self._seq = 0
        self._relaying = False
        """Connected to a master that takes relayed reports: batches go now."""
        self._refused = False
        """The master last connected to takes none: trials send theirs themselves. (Before
        the first welcome, and while the master is away, batches wait.)"""
        self._ready = asyncio.Event()
        self._urgent = asyncio.Event()
        """A checkpoint waits: it goes at once (its trial waits for it, between two steps)."""
        self._preempted: set[str] = set()
        self._watched: dict[str, asyncio.Event] = {}
        """Per allocation with a watch waiting: set when it is told to stop (or when trials
        must ask the master themselves)."""

    async def open(self) -> None:
        self._server = await asyncio.start_unix_server(
            self._serve, path="\0" + self.address[1:], limit=MAX_LINE
        )

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
        for item in self._all():
            if not item.answer.done():
                item.answer.set_result(RelayOutcome(SEND_IT_YOURSELF))

    def connected(self, relay: bool) -> None:
        """The master welcomed the agent; ``relay``: it takes relayed reports. A master that
        does not has the waiting trials send theirs themselves."""
        self._relaying = relay
        self._refused = not relay
        # What was sent to the master before is sent again: its answer may never come.
        again = [item for seq in sorted(self._sent) for item in self._sent[seq]]
        self._sent.clear()
        self._waiting[:0] = again
        if not relay:
            for item in self._waiting:
                item.answer.set_result(RelayOutcome(SEND_IT_YOURSELF))
            self._waiting.clear()
            for event in self._watched.values():
                event.set()  # the watches ask the master themselves
        self._ready.set()

    def disconnected(self) -> None:
        self._relaying = False

    def acknowledged(self, ack: ReportsAck) -> None:
        items = self._sent.pop(ack.seq, [])
        for item, outcome in zip(items, ack.outcomes, strict=False):
            if not item.answer.done():
                item.answer.set_result(outcome)
        rest = items[len(ack.outcomes) :]
        if rest:  # an answer with too few outcomes: the others are asked again
            self._waiting.extend(rest)
            self._ready.set()

    def preempt(self, allocation_id: str) -> None:
        """The master asked the allocation to stop: its watches are answered yes."""
        self._preempted.add(allocation_id)
        event = self._watched.get(allocation_id)
        if event is not None:
            event.set()

    def forget(self, allocation_id: str) -> None:
        """The allocation ended here."""
        self._preempted.discard(allocation_id)

    async def watch(self, allocation_id: str, wait: float) -> bool | None:
        """Whether the master has asked the allocation to stop, waiting up to ``wait`` seconds
        for a yes; None when the trial must ask the master itself (its master tells no
        preemptions)."""
        if self._refused:
            return None
        if allocation_id not in self._preempted and wait > 0:
            event = self._watched.setdefault(allocation_id, asyncio.Event())
            try:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(event.wait(), wait)
            finally:
                if self._watched.get(allocation_id) is event:
                    del self._watched[allocation_id]
            if self._refused:
                return None
        return allocation_id in self._preempted

    async def run(self) -> None:
        """Send what has gathered: at once when the last message went ``FLUSH_SECONDS`` ago or
        more, or when a checkpoint waits; else once that time is up."""
        loop = asyncio.get_running_loop()
        last = -FLUSH_SECONDS
        while True:
            await self._ready.wait()
            self._ready.clear()
            if not (self._waiting and self._relaying):
                continue  # woken by a connection, with nothing to send
            wait = last + FLUSH_SECONDS - loop.time()
            if wait > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._urgent.wait(), wait)
            self._urgent.clear()
            while self._waiting and self._relaying:
                # Checkpoints apart from reports: the master answers a message once every batch
                # in it is stored, and a checkpoint is registered under its lock, which a
                # report must not wait for.
                kind = self._waiting[0].batch.checkpoint is None
                items = [w for w in self._waiting if (w.batch.checkpoint is None) == kind]
                items = items[:MAX_BATCHES]
                taken = {id(w) for w in items}
                self._waiting = [w for w in self._waiting if id(w) not in taken]
                self._seq += 1
                self._sent[self._seq] = items
                message = RelayedReports(self._seq, [item.batch for item in items])
                if not await self._send(message):
                    # Gone before it left: sent again after the reconnect.
                    self._waiting[:0] = self._sent.pop(self._seq)
                    break
                last = loop.time()

    def _all(self) -> list[_Waiting]:
        return [*self._waiting, *(item for items in self._sent.values() for item in items)]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                answer = await self._answer(line)
                writer.write(json.dumps(answer).encode() + b"\n")
                await writer.drain()
        except (ConnectionError, asyncio.LimitOverrunError, ValueError) as exc:
            log.debug("a trial's relay connection ended: %s", exc)
        finally:
            writer.close()

    async def _answer(self, line: bytes) -> dict[str, Any]:
        request: Any = None
        try:
            request = json.loads(line)
            if isinstance(request, dict) and "preemption" in request:
                watch = PreemptionWatch.from_dict(request, "request")
                preempt = await self.watch(watch.allocation_id, watch.wait)
                if preempt is None:
                    return {"id": request.get("id"), "status": SEND_IT_YOURSELF}
                return {"id": request.get("id"), "status": 200, "preempt": preempt}
            batch = RelayedBatch.from_dict(request, "request")
        except (ValueError, InvalidRequest) as exc:  # not JSON, or not a request's shape
            ident = request.get("id") if isinstance(request, dict) else None
            said = exc.message if isinstance(exc, InvalidRequest) else f"not JSON: {exc}"
            error = {"error": {"type": "InvalidRequest", "message": said, "details": []}}
            return {"id": ident, "status": 400, **error}
        outcome = await self.submit(batch)
        return {"id": request.get("id"), **outcome.to_dict()}

    async def submit(self, batch: RelayedBatch) -> RelayOutcome:
        """What the master made of ``batch``, once it has been carried there."""
        if self._refused:
            return RelayOutcome(SEND_IT_YOURSELF)
        item = _Waiting(batch)
        self._waiting.append(item)
        self._ready.set()
        if batch.checkpoint is not None:
            self._urgent.set()
        return await item.answer
