"""The agent daemon: one WebSocket to the master, the allocations it runs, their logs and exits.

The agent outlives master restarts: while disconnected it keeps its processes running, buffers
their output and exit codes, and reconnects with backoff; its hello after a reconnect lists what
still runs and what exited meanwhile, so the master re-attaches them.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import json
import logging
import secrets
import signal
import socket
import urllib.parse
from collections import deque
from dataclasses import replace
from pathlib import Path

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus, InvalidURI

import assay
from assay.agent._backoff import Backoff
from assay.agent._containers import ContainerRuntime, owner
from assay.agent._executor import LOG_BATCH, LocalProcesses
from assay.agent._forking import ZygoteClient
from assay.agent._relay import ReportRelay
from assay.agent._runner import MAX_LINE, AgentEnv, AllocationRunner, base_environment
from assay.client import HttpSession
from assay.errors import InvalidRequest
from assay.protocol import (
    PING_SECONDS,
    PING_TIMEOUT_SECONDS,
    AckExit,
    AgentMessage,
    Exited,
    Heartbeat,
    Hello,
    Kill,
    LogEntry,
    Logs,
    Preempt,
    Refusal,
    RelayedReports,
    ReportsAck,
    Slot,
    Start,
    UnknownMessage,
    Welcome,
    importable_frameworks,
    master_message,
)

log = logging.getLogger(__name__)

EXIT_LINES_CHARS = 64 * 1024
"""The most output an exit carries: it is repeated in every hello until the master acknowledges
it, and a message past the master's size limit would close the connection each time."""
LOG_INTERVAL = 0.05
HEARTBEAT_SECONDS = 5.0
"""How often the agent says it is alive (the master's agent_heartbeat_seconds default)."""
MAX_BUFFERED_LINES = 200_000


class Agent:
    def __init__(
        self,
        *,
        agent_id: str,
        master_url: str,
        slots: list[Slot],
        pool: str = "default",
        labels: list[str] | None = None,
        work_root: Path,
        kill_grace: float = 10.0,
        address: str | None = None,
        token: str | None = None,
        cpu: float = 0.0,
        memory_mb: int = 0,
        zygote: bool = True,
        containers: ContainerRuntime | None = None,
    ) -> None:
        self.agent_id = agent_id
        self.session = secrets.token_hex(16)
        """Made once per process and sent in every hello: the master takes a reconnect of this
        agent while it still sees the old connection, and refuses another process with its id."""
        self.address = address
        """Where the other agents of a distributed trial reach this one; by default the address
        this agent's connection to the master leaves from (the one the master sees)."""
        self.env = AgentEnv(
            agent_id=agent_id,
            master_url=master_url.rstrip("/"),
            work_root=work_root,
            http=HttpSession(master_url, token=token, timeout=60.0),
            slots={s.id: s for s in slots},
            kill_grace=kill_grace,
            zygote=ZygoteClient(base_environment, MAX_LINE) if zygote else None,
            containers=containers,
        )
        self.processes = LocalProcesses(
            self.env,
            Hello(
                agent_id=agent_id,
                pool=pool,
                labels=list(labels or []),
                slots=list(slots),
                version=assay.__version__,
                token=token,
                session=self.session,
                cpu=cpu,
                memory_mb=memory_mb,
                container_runtime=containers.command if containers else "",
                frameworks=importable_frameworks(),
                user=getpass.getuser(),
            ),
        )
        """What the master's messages act on; this class carries them. Its hello holds what
        the agent offers (pool, labels, slots, cores, memory)."""
        self.relay = ReportRelay(self._send)
        """Carries the trials' metric reports to the master over this agent's connection."""
        self.logs: deque[LogEntry] = deque(maxlen=MAX_BUFFERED_LINES)
        self.ws: ClientConnection | None = None
        self._stop = asyncio.Event()
        self.refusal: str | None = None
        self._log_ready = asyncio.Event()

    @property
    def ws_url(self) -> str:
        parts = urllib.parse.urlsplit(self.env.master_url)
        scheme = "wss" if parts.scheme == "https" else "ws"
        return f"{scheme}://{parts.netloc}/api/v1/agents/ws"

    @property
    def runners(self) -> dict[str, AllocationRunner]:
        return self.processes.runners

    @property
    def unacked_exits(self) -> dict[str, Exited]:
        return self.processes.unacked_exits

    def hello(self, local_address: str = "") -> Hello:
        return replace(
            self.processes.hello(),
            address=self.address or local_address or socket.gethostname(),
        )

    async def run(self) -> None:
        """Stay connected until stopped; then stop every allocation and report their exits."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self._stop.set)
        if self.env.containers is not None:
            # This process runs nothing yet: a container of this agent's is a dead one's.
            runtime = self.env.containers
            mine = owner(self.agent_id, self.env.work_root)
            left = await asyncio.to_thread(runtime.leftovers, mine)
            if left:
                log.info("removing %d container(s) a previous run of this agent left", len(left))
                await asyncio.to_thread(runtime.remove_now, left)
        if self.env.zygote is not None:
            try:
                await self.env.zygote.start()
            except OSError as exc:
                log.warning("no trial zygote (%s): every trial starts through the shell", exc)
                self.env.zygote = None
        try:
            await self.relay.open()
            self.env.relay = self.relay.address
        except OSError as exc:
            log.warning("no relay of metric reports (%s): trials send their own", exc)
        await self.processes.open(self._report)
        relayer = asyncio.create_task(self.relay.run())
        flusher = asyncio.create_task(self._flush_logs())
        beater = asyncio.create_task(self._heartbeat())
        connector = asyncio.create_task(self._stay_connected())
        await self._stop.wait()
        if self.refusal is None or self.runners:
            log.info("agent %s stopping: ending %d allocations", self.agent_id, len(self.runners))
        await self.processes.kill_all()
        deadline = loop.time() + 5.0
        while (self.unacked_exits or self.logs) and self.ws is not None and loop.time() < deadline:
            await asyncio.sleep(0.05)
        connector.cancel()
        flusher.cancel()
        beater.cancel()
        relayer.cancel()
        await self.relay.close()
        for task in (connector, flusher, beater, relayer):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.processes.close()
        if self.ws is not None:
            with contextlib.suppress(Exception):
                await self.ws.close()
        if self.env.zygote is not None:
            await self.env.zygote.close()

    def stop(self) -> None:
        self._stop.set()

    async def _stay_connected(self) -> None:
        backoff = Backoff()
        warned = False
        while not self._stop.is_set():
            try:
                async with connect(
                    self.ws_url,
                    ping_interval=PING_SECONDS,
                    ping_timeout=PING_TIMEOUT_SECONDS,
                    max_size=2**26,
                    open_timeout=10,
                    ssl=self.env.http.tls,
                ) as ws:
                    await ws.send(json.dumps(self.hello(_local_host(ws)).to_dict()))
                    self.ws = ws
                    backoff.reset()
                    warned = False
                    self._log_ready.set()
                    await self._receive(ws)
            except (OSError, ConnectionClosed, InvalidStatus, InvalidURI, TimeoutError) as exc:
                if not warned:
                    log.warning("master at %s unreachable (%s); retrying", self.env.master_url, exc)
                    warned = True
            finally:
                self.ws = None
                self.relay.disconnected()
            if self._stop.is_set():
                return
            await asyncio.sleep(backoff.next())

    async def _receive(self, ws: ClientConnection) -> None:
        async for text in ws:
            try:
                raw = json.loads(text)
            except ValueError:
                log.warning("the master sent a message that is not JSON: %.200r", text)
                continue
            if not await self.on_message(raw):
                return

    async def on_message(self, raw: object) -> bool:
        """Act on one message from the master; False once the master refused this agent."""
        try:
            msg = master_message(raw)
        except UnknownMessage as exc:
            log.warning("%s", exc.message)
            return True
        except InvalidRequest as exc:
            await self._refuse_start(raw, exc)
            return True
        node = self.agent_id
        if isinstance(msg, Start):
            await self.processes.start(node, msg)
        elif isinstance(msg, Kill):
            await self.processes.kill(node, msg.allocation_id, now=msg.fenced)
        elif isinstance(msg, AckExit):
            await self.processes.acknowledge(node, msg.allocation_id)
            self.relay.forget(msg.allocation_id)
        elif isinstance(msg, ReportsAck):
            self.relay.acknowledged(msg)
        elif isinstance(msg, Preempt):
            self.relay.preempt(msg.allocation_id)
        elif isinstance(msg, Refusal):
            # The master refused this agent (no token, an unknown pool, its id taken): retrying
            # cannot help. Whoever runs the agent reports it (``python -m assay.agent`` prints
            # it as its one-line error).
            self.refusal = msg.message
            self._stop.set()
            return False
        else:
            assert isinstance(msg, Welcome)
            log.info("agent %s connected to %s", self.agent_id, self.env.master_url)
            self.relay.connected(msg.relay)
        return True

    async def _refuse_start(self, raw: object, problem: InvalidRequest) -> None:
        """A message that is not valid: a start that cannot be read still gets its exit
        reported (as a failure with the reason), so its trial does not wait forever."""
        fields = raw if isinstance(raw, dict) else {}
        alloc_id = fields.get("allocation_id")
        if fields.get("type") != Start.type or not isinstance(alloc_id, str):
            log.warning("invalid message from the master: %s", problem.message)
            return
        trial_id = fields.get("trial_id")
        await self.processes.fail(
            alloc_id, trial_id if isinstance(trial_id, int) else None, problem.message
        )

    async def _report(self, node: str, message: AgentMessage | Hello) -> None:
        """What the allocations do, on its way to the master: output lines join the batches
        (kept while the master is away); anything else goes at once, after the lines before
        it."""
        if isinstance(message, Logs):
            self.logs.extend(message.entries)
            if len(self.logs) >= LOG_BATCH:
                self._log_ready.set()
            return
        if isinstance(message, Exited):
            message = self._with_last_lines(message)
        if not await self._drain_logs() and isinstance(message, Exited) and message.logs:
            alloc_id = message.allocation_id
            if any(e.allocation_id == alloc_id for e in self.logs):
                # Lines it wrote before these still wait for the master: these wait behind
                # them, and the exit goes (now, or repeated after the reconnect) without them.
                self.logs.extend(message.logs)
                message = self._repeat_as(replace(message, logs=[]))
        await self._send(message)

    def _with_last_lines(self, exited: Exited) -> Exited:
        """The exit with its allocation's last waiting lines (up to ``LOG_BATCH`` of them and
        ``EXIT_LINES_CHARS`` of text; any before them go ahead as usual): stored in the exit's
        own transaction, not in one of their own that the exit would wait behind."""
        last: list[LogEntry] = []
        size = 0
        for entry in reversed(self.logs):
            if entry.allocation_id != exited.allocation_id:
                continue
            size += len(entry.line)
            if size > EXIT_LINES_CHARS or len(last) == LOG_BATCH:
                break
            last.append(entry)
        if not last:
            return exited
        last.reverse()
        taken = {id(e) for e in last}
        rest = [e for e in self.logs if id(e) not in taken]
        self.logs.clear()
        self.logs.extend(rest)
        return self._repeat_as(replace(exited, logs=[*last, *exited.logs]))

    def _repeat_as(self, exited: Exited) -> Exited:
        """``exited`` is what a reconnect repeats until the master acknowledges it."""
        if exited.allocation_id in self.unacked_exits:
            self.unacked_exits[exited.allocation_id] = exited
        return exited

    async def _send(self, message: AgentMessage | RelayedReports) -> bool:
        ws = self.ws
        if ws is None:
            return False
        try:
            await ws.send(json.dumps(message.to_dict()))
        except ConnectionClosed:
            return False
        return True

    async def _heartbeat(self) -> None:
        """Say it is alive: the WebSocket's pings keep the connection, but the master cannot
        see them; it shows when it last heard from the agent (``assay agent list``)."""
        while True:
            await asyncio.sleep(HEARTBEAT_SECONDS)
            await self._send(Heartbeat())

    async def _flush_logs(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._log_ready.wait(), LOG_INTERVAL)
            self._log_ready.clear()
            await self._drain_logs()

    async def _drain_logs(self) -> bool:
        """Send the waiting lines; False when some still wait (the master is away)."""
        while self.logs and self.ws is not None:
            batch = [self.logs.popleft() for _ in range(min(LOG_BATCH, len(self.logs)))]
            if not await self._send(Logs(batch)):
                self.logs.extendleft(reversed(batch))
                return False
        return not self.logs


def _local_host(ws: ClientConnection) -> str:
    """The address this end of the master's WebSocket has: what the master sees as its peer."""
    try:
        sockname = ws.local_address
    except (AttributeError, OSError):
        return ""
    return str(sockname[0]) if isinstance(sockname, tuple) and sockname else ""
