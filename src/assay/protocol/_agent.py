"""The messages of an agent's WebSocket to the master, both ways.

Every message is a JSON object with a ``type``. The agent opens with :class:`Hello` (its slots,
and the allocations it still runs or saw exit while disconnected, so a restarted master
re-attaches them); the master answers :class:`Welcome` (or :class:`Refusal`) and from then on
sends :class:`Start`, :class:`Kill` and :class:`AckExit`; the agent sends :class:`Started`,
:class:`Exited` (repeated until acknowledged), :class:`Logs` and :class:`Heartbeat`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from assay.errors import InvalidRequest
from assay.protocol._container import Container
from assay.protocol._fields import Fields, kind
from assay.protocol._info import ClusterInfo
from assay.protocol._relay import Preempt, RelayedReports, ReportsAck

AGENT_TOKEN_ENV = "ASSAY_AGENT_TOKEN"
"""The variable an agent (and a master not configured with one) takes the agent token from."""
AGENT_TOKEN_FILE = "agent-token"
"""The file in ``ASSAY_HOME`` where a master keeps the agent token it made (mode 0600), and
where an agent started with the same home finds it."""


class UnknownMessage(InvalidRequest):
    """A message whose ``type`` this side does not know (a newer peer): skipped, not fatal."""


# -- parts --------------------------------------------------------------------------------------


PING_SECONDS = 10.0
PING_TIMEOUT_SECONDS = 60.0
"""Both ends of an agent's WebSocket ping every ``PING_SECONDS`` and give the other up after
``PING_TIMEOUT_SECONDS`` without its pong: long enough for a master whose event loop runs late
under a large cluster's load. With 20 s, a master busy at 500 agents dropped every agent at
once, and their reconnects kept it behind (benchmark B13). A machine that hangs is still found
within about a minute; one that goes away closes its connection at once."""


@dataclass(frozen=True)
class Slot:
    """One slot an agent offers: a GPU (``type`` ``cuda``) or a CPU slot (``cpu``)."""

    id: str
    type: str = "cpu"
    uuid: str = ""
    name: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "type": self.type, "uuid": self.uuid, "name": self.name}

    @classmethod
    def from_dict(cls, raw: object, where: str) -> Slot:
        f = Fields(raw, where)
        return cls(
            id=f.text("id"),
            type=f.text("type", "cpu"),
            uuid=f.text("uuid", ""),
            name=f.text("name", ""),
        )


@dataclass(frozen=True)
class RankLayout:
    """One agent's share of a distributed allocation (the ``distributed`` field of a start)."""

    world_size: int
    """Processes in the whole allocation: its slot count."""
    node_rank: int
    """This agent's place among the allocation's agents (0 holds rank 0)."""
    num_nodes: int
    first_rank: int
    """The global rank of this agent's local rank 0."""
    local_world_size: int
    """Processes on this agent: its slot count in the allocation."""
    master_addr: str
    master_port: int
    """Where rank 0 serves ``torch.distributed``'s rendezvous."""
    rendezvous_port: int
    """Where rank 0 serves the harness's collectives (``ctx.distributed``)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "world_size": self.world_size,
            "node_rank": self.node_rank,
            "num_nodes": self.num_nodes,
            "first_rank": self.first_rank,
            "local_world_size": self.local_world_size,
            "master_addr": self.master_addr,
            "master_port": self.master_port,
            "rendezvous_port": self.rendezvous_port,
        }

    @classmethod
    def from_dict(cls, raw: object) -> RankLayout:
        f = Fields(raw, "start message.distributed")
        layout = cls(
            world_size=f.integer("world_size"),
            node_rank=f.integer("node_rank"),
            num_nodes=f.integer("num_nodes"),
            first_rank=f.integer("first_rank"),
            local_world_size=f.integer("local_world_size"),
            master_addr=f.text("master_addr"),
            master_port=f.integer("master_port"),
            rendezvous_port=f.integer("rendezvous_port"),
        )
        problem = layout.problem()
        if problem:
            raise InvalidRequest(f"start message: distributed {problem}")
        return layout

    def problem(self) -> str:
        if self.local_world_size < 1:
            return f"local_world_size is {self.local_world_size}; it must be at least 1"
        if not 0 <= self.node_rank < self.num_nodes:
            return f"node_rank {self.node_rank} is outside 0..{self.num_nodes - 1}"
        if not 0 <= self.first_rank <= self.world_size - self.local_world_size:
            return (
                f"first_rank {self.first_rank} with {self.local_world_size} local processes "
                f"does not fit a world of {self.world_size}"
            )
        if not self.master_addr:
            return "master_addr is empty"
        return ""

    def rank(self, local_rank: int) -> int:
        return self.first_rank + local_rank


@dataclass(frozen=True)
class ContextRef:
    """Which context archive to run, fetched from ``/api/v1/contexts/{id}`` unless cached."""

    id: int
    sha256: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "sha256": self.sha256}

    @classmethod
    def from_dict(cls, raw: object, where: str) -> ContextRef:
        f = Fields(raw, where)
        return cls(id=f.integer("id"), sha256=f.text("sha256"))


@dataclass(frozen=True)
class LogEntry:
    """One line a trial process wrote."""

    allocation_id: str
    trial_id: int
    line: str
    rank: int = 0
    stream: str = "stdout"
    """``stdout`` or ``stderr``."""
    time: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "allocation_id": self.allocation_id,
            "trial_id": self.trial_id,
            "rank": self.rank,
            "stream": self.stream,
            "time": self.time,
            "line": self.line,
        }

    @classmethod
    def from_dict(cls, raw: object, where: str) -> LogEntry:
        f = Fields(raw, where)
        return cls(
            allocation_id=f.text("allocation_id"),
            trial_id=f.integer("trial_id"),
            line=f.text("line", ""),
            rank=f.integer("rank", 0),
            stream=f.text("stream", "stdout"),
            time=f.number("time", 0.0),
        )


# -- agent to master ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Exited:
    """An allocation's processes on this agent ended; ``exit_code`` None: they were lost."""

    type: ClassVar[str] = "exited"
    allocation_id: str
    exit_code: int | None
    reason: str = ""
    logs: list[LogEntry] = field(default_factory=list)
    """The allocation's last lines, not yet sent: stored in the transaction that records the
    exit (only when it records it, so a repeat after a reconnect stores them once), and so
    never after the run is seen to have ended."""
    lost: bool = False
    """They ended with their agent (it stopped, and ended them first), not on their own: the
    cluster's loss, which never counts toward the trial's ``max_restarts``."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "allocation_id": self.allocation_id,
            "exit_code": self.exit_code,
            "reason": self.reason,
            "logs": [e.to_dict() for e in self.logs],
            "lost": self.lost,
        }

    @classmethod
    def from_dict(cls, raw: object, where: str = "exited") -> Exited:
        f = Fields(raw, where)
        return cls(
            allocation_id=f.text("allocation_id"),
            exit_code=f.integer("exit_code", None),
            reason=f.text("reason", ""),
            logs=[
                LogEntry.from_dict(e, f"{f.path('logs')}[{i}]")
                for i, e in enumerate(f.items("logs", []))
            ],
            lost=f.flag("lost", False),
        )


@dataclass(frozen=True)
class Hello:
    type: ClassVar[str] = "hello"
    agent_id: str
    pool: str = "default"
    labels: list[str] = field(default_factory=list)
    slots: list[Slot] = field(default_factory=list)
    running: list[str] = field(default_factory=list)
    """Allocations this agent still runs."""
    exited: list[Exited] = field(default_factory=list)
    """Exits the master has not acknowledged (they happened while it was away)."""
    version: str = ""
    address: str = ""
    """Where the other agents of a distributed trial reach this one."""
    token: str | None = None
    """The cluster's agent token (every master requires one)."""
    session: str = ""
    """Random, made once per agent process: a reconnect presents the same one, so the master
    tells the same agent coming back from a second process given the id of a connected one."""
    cpu: float = 0.0
    """Cores the agent offers to jobs that ask for cores (0: it did not say)."""
    memory_mb: int = 0
    """Memory in MiB the agent offers to jobs that ask for memory (0: it did not say)."""
    container_runtime: str = ""
    """The runtime it runs containers with (``podman`` or ``docker``); empty: none, so it is
    never given an allocation that names an image."""
    user: str = ""
    """The account its processes run as on their host (a shell's SSH login); empty: unknown."""
    frameworks: dict[str, bool] = field(default_factory=dict)
    """Whether its trials' Python can import each framework of
    :data:`~assay.protocol.FRAMEWORKS`; one it does not name is unknown (an older agent)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "agent_id": self.agent_id,
            "container_runtime": self.container_runtime,
            "cpu": self.cpu,
            "memory_mb": self.memory_mb,
            "pool": self.pool,
            "labels": list(self.labels),
            "slots": [s.to_dict() for s in self.slots],
            "running": list(self.running),
            "exited": [e.to_dict() for e in self.exited],
            "version": self.version,
            "address": self.address,
            "token": self.token,
            "session": self.session,
            "frameworks": dict(self.frameworks),
            "user": self.user,
        }

    @classmethod
    def from_dict(cls, raw: object, where: str = "hello") -> Hello:
        f = Fields(raw, where)
        if not f.raw.get("agent_id"):
            raise InvalidRequest("agent hello without an agent_id")
        return cls(
            agent_id=f.text("agent_id"),
            pool=f.text("pool", "") or "default",
            labels=f.texts("labels"),
            slots=[
                Slot.from_dict(s, f"{f.path('slots')}[{i}]")
                for i, s in enumerate(f.items("slots", []))
            ],
            running=f.texts("running"),
            exited=[
                Exited.from_dict(e, f"{f.path('exited')}[{i}]")
                for i, e in enumerate(f.items("exited", []))
            ],
            version=f.text("version", ""),
            address=f.text("address", ""),
            token=f.text("token", None),
            session=f.text("session", ""),
            cpu=max(0.0, f.number("cpu", 0.0)),
            memory_mb=max(0, f.integer("memory_mb", 0)),
            container_runtime=f.text("container_runtime", ""),
            frameworks=_flags(f.mapping("frameworks", {}), f.path("frameworks")),
            user=f.text("user", ""),
        )


def _flags(raw: dict[str, Any], where: str) -> dict[str, bool]:
    """A mapping of names to true or false; anything else is refused naming the entry."""
    for name, value in raw.items():
        if not isinstance(value, bool):
            raise InvalidRequest(f"{where}.{name}: must be true or false, got {kind(value)}")
    return dict(raw)


@dataclass(frozen=True)
class Started:
    """The allocation's processes are running."""

    type: ClassVar[str] = "started"
    allocation_id: str
    address: str = ""
    """Where its processes listen, where that is not the node's own address (a Kubernetes pod
    has an address of its own); empty: the node's."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "allocation_id": self.allocation_id}
        if self.address:
            out["address"] = self.address
        return out

    @classmethod
    def from_dict(cls, raw: object, where: str = "started") -> Started:
        fields = Fields(raw, where)
        return cls(allocation_id=fields.text("allocation_id"), address=fields.text("address", ""))


@dataclass(frozen=True)
class Logs:
    type: ClassVar[str] = "logs"
    entries: list[LogEntry]

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "entries": [e.to_dict() for e in self.entries]}

    @classmethod
    def from_dict(cls, raw: object, where: str = "logs") -> Logs:
        f = Fields(raw, where)
        return cls(
            entries=[
                LogEntry.from_dict(e, f"{f.path('entries')}[{i}]")
                for i, e in enumerate(f.items("entries", []))
            ]
        )


@dataclass(frozen=True)
class Heartbeat:
    """The agent is alive (sent every few seconds): the master shows when it last heard from
    each agent. The connection's own liveness is the WebSocket's pings, which it cannot see."""

    type: ClassVar[str] = "heartbeat"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type}

    @classmethod
    def from_dict(cls, raw: object, where: str = "heartbeat") -> Heartbeat:
        Fields(raw, where)
        return cls()


# -- master to agent ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Welcome:
    type: ClassVar[str] = "welcome"
    cluster_id: str
    relay: bool = False
    """The master takes its trials' metric reports relayed over this connection
    (:class:`~assay.protocol.RelayedReports`) and tells it of preemptions
    (:class:`~assay.protocol.Preempt`); a master before them says nothing."""

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "cluster_id": self.cluster_id, "relay": self.relay}

    @classmethod
    def from_dict(cls, raw: object, where: str = "welcome") -> Welcome:
        f = Fields(raw, where)
        return cls(cluster_id=f.text("cluster_id", ""), relay=f.flag("relay", False))


@dataclass(frozen=True)
class Refusal:
    """The master will not take this agent (no or a wrong token, an unknown pool, its id taken
    by a connected agent); retrying cannot help, so the agent stops."""

    type: ClassVar[str] = "error"
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "message": self.message}

    @classmethod
    def from_dict(cls, raw: object, where: str = "error") -> Refusal:
        return cls(message=Fields(raw, where).text("message", "refused by the master"))


@dataclass(frozen=True)
class Start:
    """Run a trial's entrypoint (or a job instance's commands) on these slots of the agent."""

    type: ClassVar[str] = "start"
    allocation_id: str
    trial_id: int
    """0 for the instances of jobs that are not experiments."""
    experiment_id: int
    run: int
    context: ContextRef | None
    """None: the processes start in an empty directory (a job submitted without a context)."""
    entrypoint: str | list[str]
    env: dict[str, str]
    """Variables of the trial's processes (the experiment's, then assay's own)."""
    slots: list[str]
    """The ids of this agent's slots the allocation holds (may be empty)."""
    cluster_info: ClusterInfo
    distributed: RankLayout | None = None
    """This agent's share of the ranks when the allocation has several slots."""
    container: Container | None = None
    """The container the processes run in; None: as processes on the agent's host."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type,
            "allocation_id": self.allocation_id,
            "trial_id": self.trial_id,
            "experiment_id": self.experiment_id,
            "run": self.run,
            "context": None if self.context is None else self.context.to_dict(),
            "entrypoint": self.entrypoint,
            "env": dict(self.env),
            "slots": list(self.slots),
            "cluster_info": self.cluster_info.to_dict(),
        }
        if self.distributed is not None:
            out["distributed"] = self.distributed.to_dict()
        if self.container is not None:
            out["container"] = self.container.to_dict()
        return out

    @classmethod
    def from_dict(cls, raw: object, where: str = "start message") -> Start:
        f = Fields(raw, where)
        entrypoint = f.raw.get("entrypoint")
        if not isinstance(entrypoint, str) and not (
            isinstance(entrypoint, list) and all(isinstance(a, str) for a in entrypoint)
        ):
            raise InvalidRequest(
                f"{f.path('entrypoint')}: must be a command (a string or a list of strings), "
                f"got {kind(entrypoint)}"
            )
        env = f.mapping("env", {})
        distributed = f.raw.get("distributed")
        context = f.raw.get("context")
        container = f.raw.get("container")
        return cls(
            allocation_id=f.text("allocation_id"),
            trial_id=f.integer("trial_id"),
            experiment_id=f.integer("experiment_id"),
            run=f.integer("run"),
            context=None if context is None else ContextRef.from_dict(context, f.path("context")),
            entrypoint=entrypoint,
            env={str(k): str(v) for k, v in env.items()},
            slots=f.texts("slots"),
            cluster_info=ClusterInfo.from_dict(
                f.mapping("cluster_info", {}), where=f.path("cluster_info")
            ),
            distributed=None if distributed is None else RankLayout.from_dict(distributed),
            container=None
            if container is None
            else Container.from_dict(container, f.path("container")),
        )


@dataclass(frozen=True)
class Kill:
    """Stop the allocation's processes (SIGTERM, then SIGKILL after the agent's grace)."""

    type: ClassVar[str] = "kill"
    allocation_id: str
    fenced: bool = False
    """The master has given the allocation up (its agent was lost; its trial may run elsewhere
    now): SIGKILL at once, with no grace in which the old copy could write anything more."""

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "allocation_id": self.allocation_id, "fenced": self.fenced}

    @classmethod
    def from_dict(cls, raw: object, where: str = "kill") -> Kill:
        f = Fields(raw, where)
        return cls(allocation_id=f.text("allocation_id"), fenced=f.flag("fenced", False))


@dataclass(frozen=True)
class AckExit:
    """The master recorded the allocation's exit: the agent may forget it and its files."""

    type: ClassVar[str] = "ack_exit"
    allocation_id: str

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "allocation_id": self.allocation_id}

    @classmethod
    def from_dict(cls, raw: object, where: str = "ack_exit") -> AckExit:
        return cls(allocation_id=Fields(raw, where).text("allocation_id"))


AgentMessage = Hello | Started | Exited | Logs | Heartbeat | RelayedReports
"""What an agent sends."""
MasterMessage = Welcome | Refusal | Start | Kill | AckExit | ReportsAck | Preempt
"""What the master sends an agent."""

_FROM_AGENT: dict[str, Any] = {
    m.type: m for m in (Hello, Started, Exited, Logs, Heartbeat, RelayedReports)
}
_FROM_MASTER: dict[str, Any] = {
    m.type: m for m in (Welcome, Refusal, Start, Kill, AckExit, ReportsAck, Preempt)
}


def _decode(raw: object, known: dict[str, Any], sender: str) -> Any:
    if not isinstance(raw, dict):
        raise InvalidRequest(f"a message from the {sender} must be an object, got {kind(raw)}")
    cls = known.get(str(raw.get("type")))
    if cls is None:
        raise UnknownMessage(f"unknown message type {raw.get('type')!r} from the {sender}")
    return cls.from_dict(raw)


def agent_message(raw: object) -> AgentMessage:
    """The message an agent sent; :class:`UnknownMessage` for a type this master lacks."""
    message: AgentMessage = _decode(raw, _FROM_AGENT, "agent")
    return message


def master_message(raw: object) -> MasterMessage:
    """The message the master sent; :class:`UnknownMessage` for a type this agent lacks."""
    message: MasterMessage = _decode(raw, _FROM_MASTER, "master")
    return message
