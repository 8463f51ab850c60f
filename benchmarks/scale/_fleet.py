"""Simulated agents for B13: many agents in one asyncio process.

Each agent is a real WebSocket to the master's ``/api/v1/agents/ws`` with the cluster's agent
token, speaking ``assay.protocol``'s messages as ``python -m assay.agent`` does (hello, started,
exited until acknowledged, logs, heartbeats, a reconnect with backoff whose hello lists what
still runs). Each trial it is given is played through the harness's REST API with the
allocation's token, as ``assay.core`` does: it asks for its length, reports training metrics and
validations and registers checkpoints (handed to its agent's relay, the agent's own
``ReportRelay``, which carries them over the agent's connection), writes log lines (shipped by
its agent), watches the preemption signal through the relay (the master tells the agent),
completes its operation and exits. A request
that fails for want of a master is retried, as the harness retries it, so a master killed under
load costs nothing that was acknowledged.

The fleet keeps the ledger a run is checked against: every report the master acknowledged,
every start per trial, and when each agent was last welcomed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import secrets
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

import assay
from assay.agent import Backoff, ReportRelay
from assay.protocol import (
    PING_SECONDS,
    PING_TIMEOUT_SECONDS,
    SEND_IT_YOURSELF,
    AckExit,
    Exited,
    Heartbeat,
    Hello,
    Kill,
    LogEntry,
    Logs,
    Preempt,
    Refusal,
    RelayedBatch,
    ReportsAck,
    Slot,
    Start,
    Started,
    TrialEnv,
    Welcome,
    master_message,
)
from benchmarks.scale._http import Pool

log = logging.getLogger("b13")

SLOTS_PER_AGENT = 8
HEARTBEAT_SECONDS = 5.0  # as the real agent's
LOG_FLUSH_SECONDS = 1.0
RETRY_DEADLINE = 600.0  # as the harness's
PREEMPT_POLL_SECONDS = 60.0  # as the harness's long poll


@dataclass
class Cadence:
    """What each simulated trial does, in steps of ``step_seconds``."""

    step_seconds: float = 1.0
    train_every: int = 10
    """A training metric every this many steps (10 s at 1 s a step)."""
    validate_every: int = 60
    """A validation and a checkpoint every this many steps, and at the end."""
    watch_preemption: bool = True


@dataclass
class Ledger:
    """What the master acknowledged, and when things happened (``time.monotonic()``)."""

    acked: dict[int, set[tuple[str, int]]] = field(default_factory=dict)
    """Per trial: the (group, steps) of each metric report the master answered 204."""
    checkpoints: dict[int, set[str]] = field(default_factory=dict)
    starts: Counter[int] = field(default_factory=Counter)
    """Per trial: how many allocations were started for it."""
    started_at: dict[str, float] = field(default_factory=dict)
    exited_at: dict[str, float] = field(default_factory=dict)
    exit_codes: dict[str, int] = field(default_factory=dict)
    last_ok: dict[str, float] = field(default_factory=dict)
    """Per allocation: when the master last answered one of its trial's requests."""
    welcomed_at: dict[str, float] = field(default_factory=dict)
    report_latency: list[tuple[float, float]] = field(default_factory=list)
    """(when, seconds) of each metric report's round trip."""
    errors: list[str] = field(default_factory=list)
    disconnects: Counter[str] = field(default_factory=Counter)
    """Why agents' connections ended (or failed to open), counted."""
    log_lines: int = 0
    requests: int = 0

    def error(self, message: str) -> None:
        if len(self.errors) < 200:
            self.errors.append(message)


class Fenced(Exception):
    """The master gave the allocation up: the trial stops, writing nothing more."""


class SimTrial:
    def __init__(self, agent: SimAgent, start: Start) -> None:
        self.agent = agent
        self.start = start
        self.alloc = start.allocation_id
        self.trial_id = start.trial_id
        info = start.cluster_info.trial
        self.steps = info.steps_completed if info is not None else 0
        self.token = start.env.get(TrialEnv.TOKEN, "")
        self.preempted = asyncio.Event()
        self.pending: set[asyncio.Task[None]] = set()
        self.lines: list[LogEntry] = []

    # -- requests ----------------------------------------------------------------------------

    async def call(
        self, method: str, path: str, *, body: Any = None, params: Any = None, timeout: float = 30
    ) -> Any:
        """The master's JSON answer (None for 204), retried while no master answers."""
        ledger = self.agent.fleet.ledger
        deadline = time.monotonic() + RETRY_DEADLINE
        backoff = 0.2
        while True:
            ledger.requests += 1
            try:
                status, content = await self.agent.http.request(
                    method, path, token=self.token, body=body, params=params, timeout=timeout
                )
            except (OSError, asyncio.IncompleteReadError, TimeoutError) as exc:
                problem = type(exc).__name__
            else:
                if status < 300:
                    ledger.last_ok[self.alloc] = time.monotonic()
                    return json.loads(content) if content else None
                if status == 409 and b"Fenced" in content:
                    raise Fenced(self.alloc)
                if status < 500 and status not in (401, 429):
                    text = content[:300].decode(errors="replace")
                    raise RuntimeError(f"{method} {path}: {status} {text}")
                # 401: a restarted master that has not read the allocation's token back yet.
                problem = str(status)
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{method} {path}: no answer within {RETRY_DEADLINE}s ({problem})"
                )
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 2.0)

    async def relayed(self, batch: RelayedBatch, path: str, body: Any) -> None:
        """As the harness does: through the agent's relay while it relays, else over HTTP."""
        outcome = await self.agent.relay.submit(batch)
        if outcome.status == SEND_IT_YOURSELF:
            await self.call("POST", path, body=body)
        elif outcome.status == 409 and outcome.error.get("type") == "Fenced":
            raise Fenced(self.alloc)
        elif outcome.status != 204:
            raise RuntimeError(f"relayed to {path}: {outcome.status} {outcome.error}")
        self.agent.fleet.ledger.last_ok[self.alloc] = time.monotonic()

    async def report(self, group: str, steps: int, metrics: dict[str, float]) -> None:
        reports = [
            {"group": group, "steps_completed": steps, "metrics": metrics, "time": time.time()}
        ]
        began = time.monotonic()
        await self.relayed(
            RelayedBatch(self.token, self.trial_id, reports),
            f"/api/v1/trials/{self.trial_id}/metrics",
            {"reports": reports},
        )
        ledger = self.agent.fleet.ledger
        ledger.report_latency.append((began, time.monotonic() - began))
        ledger.acked.setdefault(self.trial_id, set()).add((group, steps))

    async def checkpoint(self, steps: int) -> None:
        ckpt = str(uuid.uuid4())
        body = {
            "uuid": ckpt,
            "steps_completed": steps,
            "metadata": {"steps_completed": steps},
            "resources": {"state.bin": 4096},
        }
        await self.relayed(
            RelayedBatch(self.token, self.trial_id, [], checkpoint=body),
            "/api/v1/checkpoints",
            body,
        )
        self.agent.fleet.ledger.checkpoints.setdefault(self.trial_id, set()).add(ckpt)

    def spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)

    # -- the trial ---------------------------------------------------------------------------

    async def play(self) -> int:
        cadence = self.agent.fleet.cadence
        op = await self.call(
            "GET", f"/api/v1/trials/{self.trial_id}/searcher/operation",
            params={"timeout": 60}, timeout=120,
        )  # fmt: skip
        # Trials that start together do not report in step: each first loads its data for a
        # while (up to one reporting period).
        period = cadence.train_every * cadence.step_seconds
        await asyncio.sleep(self.agent.fleet.rng.uniform(0, period))
        watcher = None
        if cadence.watch_preemption:
            watcher = asyncio.ensure_future(self.watch())
        try:
            while not op["done"]:
                length = int(op["length"])
                if not await self.train_to(length, cadence):
                    await self.checkpoint(self.steps)
                    await self.drain()
                    return 0
                await self.drain()
                metric = 1.0 / (1 + self.steps)
                await self.call(
                    "POST", f"/api/v1/trials/{self.trial_id}/searcher/completed_operation",
                    body={"length": length, "metric": metric},
                )  # fmt: skip
                op = await self.call(
                    "GET", f"/api/v1/trials/{self.trial_id}/searcher/operation",
                    params={"timeout": 60}, timeout=120,
                )  # fmt: skip
            return 0
        finally:
            if watcher is not None:
                watcher.cancel()

    async def train_to(self, length: int, cadence: Cadence) -> bool:
        """Train to ``length`` steps; False when told to stop first (it checkpoints)."""
        while self.steps < length:
            n = min(cadence.train_every - self.steps % cadence.train_every, length - self.steps)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.preempted.wait(), n * cadence.step_seconds)
            if self.preempted.is_set():
                return False
            now = time.time()
            for i in range(n):
                self.write(f"step {self.steps + i + 1} loss {1.0 / (2 + self.steps + i):.6f}", now)
            self.steps += n
            loss = 1.0 / (1 + self.steps)
            if self.steps % cadence.train_every == 0:
                self.spawn(self.report("training", self.steps, {"loss": loss}))
            if self.steps % cadence.validate_every == 0 or self.steps == length:
                self.spawn(self.validate(self.steps, loss))
        return True

    async def validate(self, steps: int, loss: float) -> None:
        await self.report("validation", steps, {"validation_loss": loss})
        await self.checkpoint(steps)

    async def drain(self) -> None:
        while self.pending:
            await asyncio.gather(*list(self.pending))

    async def watch(self) -> None:
        path = f"/api/v1/allocations/{self.alloc}/signals/preemption"
        while not self.preempted.is_set():
            # As the harness's watcher does: through the agent's relay while it relays.
            told = await self.agent.relay.watch(self.alloc, PREEMPT_POLL_SECONDS)
            if told is not None:
                if told:
                    self.preempted.set()
                continue
            try:
                answer = await self.call(
                    "GET", path, params={"timeout_seconds": PREEMPT_POLL_SECONDS},
                    timeout=PREEMPT_POLL_SECONDS + 30,
                )  # fmt: skip
            except Fenced:
                return
            if answer and answer.get("preempt"):
                self.preempted.set()

    def write(self, line: str, when: float) -> None:
        self.agent.lines.append(
            LogEntry(allocation_id=self.alloc, trial_id=self.trial_id, line=line, time=when)
        )


class SimAgent:
    def __init__(self, fleet: Fleet, agent_id: str) -> None:
        self.fleet = fleet
        self.id = agent_id
        self.session = secrets.token_hex(8)
        self.http = Pool(fleet.url)
        self.ws: ClientConnection | None = None
        self.running: dict[str, asyncio.Task[None]] = {}
        self.unacked: dict[str, Exited] = {}
        self.lines: list[LogEntry] = []
        self.stopped = False
        self.refused = ""
        self.relay = ReportRelay(self.send_now)

    def hello(self) -> Hello:
        return Hello(
            agent_id=self.id,
            slots=[Slot(id=str(i), type="cpu") for i in range(SLOTS_PER_AGENT)],
            running=list(self.running),
            exited=list(self.unacked.values()),
            version=assay.__version__,
            address="127.0.0.1",
            token=self.fleet.agent_token,
            session=self.session,
        )

    async def send(self, message: Any) -> None:
        ws = self.ws
        if ws is None:
            return  # sent again in the next hello (exits), or lost with the connection (logs)
        with contextlib.suppress(ConnectionClosed):
            await ws.send(json.dumps(message.to_dict()))

    async def send_now(self, message: Any) -> bool:
        ws = self.ws
        if ws is None:
            return False
        try:
            await ws.send(json.dumps(message.to_dict()))
        except ConnectionClosed:
            return False
        return True

    async def stay_connected(self) -> None:
        backoff = Backoff(random.Random(self.fleet.rng.random()))
        while not self.stopped:
            try:
                async with connect(
                    self.fleet.ws_url, ping_interval=PING_SECONDS,
                    ping_timeout=PING_TIMEOUT_SECONDS, max_size=2**26,
                    open_timeout=30,
                ) as ws:  # fmt: skip
                    await ws.send(json.dumps(self.hello().to_dict()))
                    self.ws = ws
                    backoff.reset()
                    async for text in ws:
                        await self.on_message(json.loads(text))
                        if self.refused:
                            return
                    self.fleet.ledger.disconnects[f"closed {ws.close_code} {ws.close_reason}"] += 1
            except ConnectionClosed as exc:
                code = exc.rcvd.code if exc.rcvd else exc.sent.code if exc.sent else None
                self.fleet.ledger.disconnects[f"{type(exc).__name__} {code}"] += 1
            except (OSError, InvalidStatus, TimeoutError) as exc:
                self.fleet.ledger.disconnects[type(exc).__name__] += 1
            finally:
                self.ws = None
                self.relay.disconnected()
            if self.stopped:
                return
            await asyncio.sleep(backoff.next())

    async def on_message(self, raw: object) -> None:
        msg = master_message(raw)
        if isinstance(msg, Welcome):
            self.fleet.ledger.welcomed_at[self.id] = time.monotonic()
            self.relay.connected(msg.relay)
        elif isinstance(msg, ReportsAck):
            self.relay.acknowledged(msg)
        elif isinstance(msg, Preempt):
            self.relay.preempt(msg.allocation_id)
        elif isinstance(msg, Refusal):
            self.refused = msg.message
            self.fleet.ledger.error(f"agent {self.id} refused: {msg.message}")
        elif isinstance(msg, Start):
            self.fleet.ledger.starts[msg.trial_id] += 1
            self.fleet.ledger.started_at[msg.allocation_id] = time.monotonic()
            self.running[msg.allocation_id] = asyncio.ensure_future(self.run(msg))
            await self.send(Started(msg.allocation_id))
        elif isinstance(msg, Kill):
            task = self.running.get(msg.allocation_id)
            if task is not None:
                task.cancel()
            elif msg.allocation_id in self.unacked:
                await self.send(self.unacked[msg.allocation_id])
        elif isinstance(msg, AckExit):
            self.unacked.pop(msg.allocation_id, None)
            self.relay.forget(msg.allocation_id)

    async def run(self, start: Start) -> None:
        trial = SimTrial(self, start)
        code = 1
        try:
            code = await trial.play()
        except asyncio.CancelledError:
            code = -15  # killed (SIGTERM), as the executor reports a signalled process
        except Fenced:
            code = -9
        except Exception as exc:
            self.fleet.ledger.error(f"trial {start.trial_id}: {exc}")
        finally:
            for task in list(trial.pending):
                task.cancel()
        self.running.pop(start.allocation_id, None)
        self.flush_lines()
        ledger = self.fleet.ledger
        ledger.exited_at[start.allocation_id] = time.monotonic()
        ledger.exit_codes[start.allocation_id] = code
        exited = Exited(allocation_id=start.allocation_id, exit_code=code)
        self.unacked[start.allocation_id] = exited
        await self.send(exited)

    def flush_lines(self) -> None:
        if self.lines and self.ws is not None:
            batch, self.lines = self.lines, []
            self.fleet.ledger.log_lines += len(batch)
            self.fleet.spawn(self.send(Logs(batch)))

    async def chores(self) -> None:
        """Ship log lines every second and a heartbeat every five, as the agent does."""
        beat = time.monotonic()
        while not self.stopped:
            await asyncio.sleep(LOG_FLUSH_SECONDS)
            self.flush_lines()
            if time.monotonic() - beat >= HEARTBEAT_SECONDS:
                beat = time.monotonic()
                await self.send(Heartbeat())


class Fleet:
    """``count`` simulated agents of 8 slots each against the master at ``url``."""

    def __init__(
        self, url: str, agent_token: str, cadence: Cadence, prefix: str = "sim", seed: int = 13
    ) -> None:
        self.url = url
        self.ws_url = url.replace("http://", "ws://", 1) + "/api/v1/agents/ws"
        self.agent_token = agent_token
        self.cadence = cadence
        self.prefix = prefix
        self.ledger = Ledger()
        self.rng = random.Random(seed)
        self.agents: list[SimAgent] = []
        self.tasks: list[asyncio.Task[None]] = []
        self._spawned: set[asyncio.Task[None]] = set()

    def spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._spawned.add(task)
        task.add_done_callback(self._spawned.discard)

    async def grow(self, count: int, per_second: float = 200.0) -> None:
        """Connect agents until there are ``count`` (at most ``per_second`` new ones a second,
        as machines joining do, not one burst of handshakes)."""
        while len(self.agents) < count:
            agent = SimAgent(self, f"{self.prefix}-{len(self.agents):05d}")
            self.agents.append(agent)
            self.tasks.append(asyncio.ensure_future(agent.stay_connected()))
            self.tasks.append(asyncio.ensure_future(agent.chores()))
            self.tasks.append(asyncio.ensure_future(agent.relay.run()))
            await asyncio.sleep(1.0 / per_second)

    def connected(self) -> int:
        return sum(1 for a in self.agents if a.ws is not None and a.id in self.ledger.welcomed_at)

    def running(self) -> int:
        return sum(len(a.running) for a in self.agents)

    async def close(self) -> None:
        for agent in self.agents:
            agent.stopped = True
            for task in agent.running.values():
                task.cancel()
            if agent.ws is not None:
                with contextlib.suppress(Exception):
                    await agent.ws.close()
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        for agent in self.agents:
            agent.http.close()
