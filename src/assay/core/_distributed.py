"""``ctx.distributed``: a process's place in a distributed trial, and collectives between ranks.

The collectives carry small Python objects (a searcher operation, a preemption flag, a list of
ranks), not tensors: training code uses ``torch.distributed`` for those. They run over a star
of TCP connections. The chief (rank 0) listens on ``chief_ip:port`` and every other rank
connects to it with retries; ``gather`` sends each rank's object to the chief, ``broadcast``
sends the chief's object to every rank, ``allgather`` is one then the other. The ``_local``
variants run the same way among the processes of one node, through its local chief (local rank
0), which listens on a loopback port it announces when the ranks first meet.

Objects travel pickled and length-prefixed. A process is let in only after a JSON hello that
carries the group's secret (by default the allocation's token, which every rank of it shares),
so nothing a stranger sends is ever unpickled.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from assay.errors import AssayError
from assay.protocol import TrialEnv

log = logging.getLogger("assay.core")

T = TypeVar("T")

DEFAULT_PORT = 12360
"""The chief's port when neither the constructor nor the environment names one (Determined's)."""
CONNECT_TIMEOUT = 300.0
"""How long ranks wait for each other to connect when the context is built."""
COLLECTIVE_TIMEOUT = 1800.0
"""How long a collective waits for a peer (torch.distributed's default too): ranks may do
minutes of work, such as writing a checkpoint, between two collectives."""

_HEADER = struct.Struct("!Q")
_MAX_HELLO = 64 * 1024


class DistributedError(AssayError):
    """Raised when ranks cannot meet or a collective cannot complete: a peer did not connect in
    time, exited, or called a different collective."""

    type = "DistributedError"


# -- framing ------------------------------------------------------------------------------------


def _send_frame(sock: socket.socket, payload: bytes) -> None:
    sock.sendall(_HEADER.pack(len(payload)) + payload)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks: list[bytes] = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            raise EOFError("the connection was closed")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _recv_frame(sock: socket.socket, limit: int | None = None) -> bytes:
    (length,) = _HEADER.unpack(_recv_exact(sock, _HEADER.size))
    if limit is not None and length > limit:
        raise ValueError(f"a frame of {length} bytes where at most {limit} were expected")
    return _recv_exact(sock, length)


def _is_loopback(host: str) -> bool:
    return host == "localhost" or host.startswith("127.") or host == "::1"


# -- one group: a hub and its members -----------------------------------------------------------


class _Star:
    """The connections of one group. Member 0 (the hub) holds a socket to every other member;
    every other member holds one socket, to the hub."""

    def __init__(
        self,
        me: int,
        size: int,
        name: Callable[[int], str],
        timeout: float,
        peers: dict[int, socket.socket] | None = None,
        hub: socket.socket | None = None,
    ) -> None:
        self.me = me
        self.size = size
        self.name = name
        self.timeout = timeout
        self.peers = peers or {}
        self.hub = hub
        self.seq = 0
        self.lock = threading.Lock()
        self.closed = False

    def gather(self, obj: Any, kind: str = "gather") -> list[Any] | None:
        with self.lock:
            return self._gather(obj, kind)

    def broadcast(self, obj: Any, kind: str = "broadcast") -> Any:
        with self.lock:
            return self._broadcast(obj, kind)

    def allgather(self, obj: Any) -> list[Any]:
        with self.lock:
            gathered = self._gather(obj, "allgather")
            result: list[Any] = self._broadcast(gathered, "allgather")
            return result

    def _gather(self, obj: Any, kind: str) -> list[Any] | None:
        self._check_open(kind)
        self.seq += 1
        if self.me == 0:
            out = [obj]
            for member in range(1, self.size):
                out.append(self._recv(member, kind))
            return out
        assert self.hub is not None
        self._send(self.hub, 0, kind, obj)
        return None

    def _broadcast(self, obj: Any, kind: str) -> Any:
        self._check_open(kind)
        self.seq += 1
        if self.me == 0:
            for member in range(1, self.size):
                self._send(self.peers[member], member, kind, obj)
            return obj
        return self._recv(0, kind)

    def _check_open(self, kind: str) -> None:
        if self.closed:
            raise DistributedError(f"{kind} on {self.name(self.me)} after the context was closed")

    def _send(self, sock: socket.socket, member: int, kind: str, obj: Any) -> None:
        import pickle  # here: a single-process trial never needs it

        payload = pickle.dumps((self.seq, kind, obj), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            sock.settimeout(self.timeout)
            _send_frame(sock, payload)
        except OSError as exc:
            raise DistributedError(
                f"{self.name(self.me)} could not send its {kind} to {self.name(member)} "
                f"({exc}): that process has probably exited"
            ) from exc

    def _recv(self, member: int, kind: str) -> Any:
        sock = self.hub if member == 0 else self.peers[member]
        assert sock is not None
        try:
            sock.settimeout(self.timeout)
            frame = _recv_frame(sock)
        except TimeoutError as exc:
            raise DistributedError(
                f"{self.name(self.me)} waited {self.timeout:.0f}s in {kind} #{self.seq} for "
                f"{self.name(member)}: every rank must call the same collectives in the same "
                "order"
            ) from exc
        except (OSError, EOFError) as exc:
            raise DistributedError(
                f"{self.name(member)} closed its connection while {self.name(self.me)} waited "
                f"in {kind} #{self.seq}: that process has probably exited or failed"
            ) from exc
        import pickle

        seq, their_kind, obj = pickle.loads(frame)
        if (seq, their_kind) != (self.seq, kind):
            raise DistributedError(
                f"{self.name(member)} called {their_kind} #{seq} while {self.name(self.me)} "
                f"called {kind} #{self.seq}: every rank must call the same collectives in the "
                "same order"
            )
        return obj

    def close(self) -> None:
        self.closed = True
        for sock in [*self.peers.values(), *([self.hub] if self.hub else [])]:
            with contextlib.suppress(OSError):
                sock.close()


def _serve(
    listener: socket.socket,
    size: int,
    group: str,
    secret: str,
    deadline: float,
    name: Callable[[int], str],
    where: str,
) -> tuple[dict[int, socket.socket], dict[int, dict[str, Any]]]:
    """Accept the other ``size - 1`` members of ``group``; their sockets and hellos by member."""
    peers: dict[int, socket.socket] = {}
    hellos: dict[int, dict[str, Any]] = {}
    while len(peers) < size - 1:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            for sock in peers.values():
                sock.close()
            missing = [name(m) for m in range(1, size) if m not in peers]
            raise DistributedError(
                f"{', '.join(missing)} did not connect to {name(0)} at {where} within the "
                f"connect timeout: check that every rank was started and can reach {where}"
            )
        listener.settimeout(remaining)
        try:
            conn, addr = listener.accept()
        except TimeoutError:
            continue
        try:
            conn.settimeout(min(remaining, 10.0))
            hello = json.loads(_recv_frame(conn, _MAX_HELLO))
            problem = _hello_problem(hello, group, size, secret, peers)
            if problem:
                log.warning("refused a connection from %s to %s: %s", addr[0], where, problem)
                _send_frame(conn, json.dumps({"error": problem}).encode())
                conn.close()
                continue
        except (OSError, EOFError, ValueError) as exc:
            log.warning("dropped a connection from %s to %s: %s", addr[0], where, exc)
            conn.close()
            continue
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        peers[int(hello["member"])] = conn
        hellos[int(hello["member"])] = hello
    return peers, hellos


def _hello_problem(
    hello: Any, group: str, size: int, secret: str, peers: dict[int, socket.socket]
) -> str:
    if not isinstance(hello, dict) or hello.get("secret") != secret:
        return "wrong secret: this is another trial's rendezvous"
    if hello.get("group") != group or hello.get("size") != size:
        return (
            f"it expected a {hello.get('group')} group of {hello.get('size')} processes; "
            f"this {group} group has {size}"
        )
    member = hello.get("member")
    if not isinstance(member, int) or not 0 < member < size:
        return f"member {member!r} is not in 1..{size - 1}"
    if member in peers:
        return f"member {member} is already connected"
    return ""


def _join(
    host: str,
    port: int,
    hello: dict[str, Any],
    deadline: float,
    me: str,
    hub: str,
) -> tuple[socket.socket, dict[str, Any]]:
    """Connect to the hub with retries, say hello, and wait to be welcomed."""
    delay = 0.05
    while True:
        remaining = deadline - time.monotonic()
        try:
            sock = socket.create_connection((host, port), timeout=max(0.1, min(remaining, 5.0)))
        except OSError as exc:
            if time.monotonic() + delay >= deadline:
                raise DistributedError(
                    f"{me} could not reach {hub} at {host}:{port} within the connect timeout "
                    f"(last error: {exc}); check that {hub} runs and that {host} is reachable "
                    "from this machine"
                ) from exc
            time.sleep(delay)
            delay = min(delay * 2, 1.0)
            continue
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            _send_frame(sock, json.dumps(hello).encode())
            # The hub welcomes everyone once all have joined, so this waits for the slowest.
            sock.settimeout(max(0.1, deadline - time.monotonic()))
            welcome = json.loads(_recv_frame(sock, _MAX_HELLO))
        except TimeoutError as exc:
            sock.close()
            raise DistributedError(
                f"{me} connected to {hub} at {host}:{port}, but not every rank joined within "
                "the connect timeout"
            ) from exc
        except (OSError, EOFError, ValueError) as exc:
            sock.close()
            raise DistributedError(
                f"{me} lost its connection to {hub} at {host}:{port} while joining: {exc}"
            ) from exc
        if "error" in welcome:
            sock.close()
            raise DistributedError(
                f"{hub} at {host}:{port} refused {me}: {welcome['error']}; is another "
                "process listening on that port?"
            )
        return sock, welcome


def _listen(host: str, port: int) -> socket.socket:
    try:
        return socket.create_server((host, port), backlog=128)
    except OSError as exc:
        raise DistributedError(
            f"the chief could not listen on port {port} ({exc}); pass another port "
            "(ASSAY_RENDEZVOUS_PORT, or pub_port=)"
        ) from exc


# -- the context --------------------------------------------------------------------------------


class DistributedContext:
    """The process's place in a distributed trial (Determined's ``DistributedContext``).

    ``rank``/``size`` place it among all processes, ``local_rank``/``local_size`` among those of
    its node, ``cross_rank``/``cross_size`` give the node among the nodes. With ``size > 1``
    building the context connects every rank to the chief (rank 0), which listens on
    ``chief_ip:pub_port + port_offset``; it returns once all ``size`` processes have connected,
    or raises :class:`DistributedError` after ``connect_timeout`` seconds. ``chief_ip`` may be
    left out when every rank runs on one node. Collectives must be called by every rank of the
    group, in the same order. ``pull_port`` and ``force_tcp`` are accepted for compatibility
    with Determined; one TCP port is all it takes here.
    """

    def __init__(
        self,
        *,
        rank: int = 0,
        size: int = 1,
        local_rank: int = 0,
        local_size: int = 1,
        cross_rank: int = 0,
        cross_size: int = 1,
        chief_ip: str | None = None,
        pub_port: int | None = None,
        pull_port: int | None = None,
        port_offset: int = 0,
        force_tcp: bool = False,
        secret: str | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
        timeout: float = COLLECTIVE_TIMEOUT,
    ) -> None:
        del pull_port, force_tcp
        if not 0 <= rank < size:
            raise ValueError(f"rank must be in [0, {size}), got {rank}")
        if not 0 <= local_rank < local_size <= size:
            raise ValueError(
                f"local_rank must be in [0, local_size) and local_size <= size; got local_rank "
                f"{local_rank}, local_size {local_size}, size {size}"
            )
        if size > 1 and cross_size > 1 and not chief_ip:
            raise ValueError(
                "chief_ip (the address of rank 0) is needed when the ranks span several nodes"
            )
        self.rank = rank
        self.size = size
        self.local_rank = local_rank
        self.local_size = local_size
        self.cross_rank = cross_rank
        self.cross_size = cross_size
        self.chief_ip = chief_ip
        self.port = (pub_port if pub_port is not None else _env_port()) + port_offset
        self._secret = secret if secret is not None else os.environ.get(TrialEnv.TOKEN, "")
        self._connect_timeout = connect_timeout
        self._timeout = timeout
        self._global: _Star | None = None
        self._local: _Star | None = None
        if size > 1:
            self._connect()

    @classmethod
    def from_torch_distributed(cls, chief_ip: str | None = None) -> DistributedContext:
        """Ranks from the variables ``torchrun`` (and assay's agent) set."""
        env = os.environ
        size = int(env.get("WORLD_SIZE", "1"))
        local_size = int(env.get("LOCAL_WORLD_SIZE", "1"))
        return cls(
            rank=int(env.get("RANK", "0")),
            size=size,
            local_rank=int(env.get("LOCAL_RANK", "0")),
            local_size=local_size,
            cross_rank=int(env.get("GROUP_RANK", env.get("CROSS_RANK", "0"))),
            cross_size=max(1, size // max(1, local_size)),
            chief_ip=chief_ip or env.get("MASTER_ADDR"),
        )

    # -- meeting ----------------------------------------------------------------------------

    def _connect(self) -> None:
        deadline = time.monotonic() + self._connect_timeout
        host = self.chief_ip or "127.0.0.1"
        shared_local = self.local_size == self.size
        local_listener: socket.socket | None = None
        if self.local_size > 1 and self.local_rank == 0 and not shared_local:
            local_listener = _listen("127.0.0.1", 0)
        local_port = local_listener.getsockname()[1] if local_listener else None
        try:
            if self.rank == 0:
                local_ports = self._serve_global(host, deadline, local_port)
                my_local_port = local_ports.get(self.cross_rank)
            else:
                sock, welcome = _join(
                    host,
                    self.port,
                    self._hello("global", self.rank, self.size, local_port),
                    deadline,
                    _rank_name(self.rank),
                    "the chief (rank 0)",
                )
                self._global = _Star(self.rank, self.size, _rank_name, self._timeout, hub=sock)
                my_local_port = welcome.get("local_port")
            if shared_local:
                self._local = self._global
            elif self.local_size > 1:
                self._meet_locally(local_listener, my_local_port, deadline)
        except BaseException:
            self.close()
            raise
        finally:
            if local_listener is not None:
                local_listener.close()

    def _serve_global(self, host: str, deadline: float, local_port: int | None) -> dict[int, Any]:
        bind = host if _is_loopback(host) else ""
        listener = _listen(bind, self.port)
        try:
            peers, hellos = _serve(
                listener,
                self.size,
                "global",
                self._secret,
                deadline,
                _rank_name,
                f"{host}:{self.port}",
            )
        finally:
            listener.close()
        self._global = _Star(0, self.size, _rank_name, self._timeout, peers=peers)
        local_ports: dict[int, Any] = {self.cross_rank: local_port}
        for hello in hellos.values():
            if hello.get("local_port") is not None:
                local_ports[int(hello["cross_rank"])] = hello["local_port"]
        for member, sock in peers.items():
            cross = hellos[member].get("cross_rank")
            welcome = {"local_port": local_ports.get(int(cross)) if cross is not None else None}
            _send_welcome(sock, welcome, _rank_name(member))
        return local_ports

    def _meet_locally(
        self, listener: socket.socket | None, port: int | None, deadline: float
    ) -> None:
        def name(member: int) -> str:
            return f"local rank {member} of node {self.cross_rank}"

        if self.local_rank == 0:
            assert listener is not None
            where = f"127.0.0.1:{listener.getsockname()[1]}"
            peers, _ = _serve(
                listener, self.local_size, "local", self._secret, deadline, name, where
            )
            self._local = _Star(0, self.local_size, name, self._timeout, peers=peers)
            for member, sock in peers.items():
                _send_welcome(sock, {}, name(member))
            return
        if port is None:
            raise DistributedError(
                f"node {self.cross_rank} has no local chief (local rank 0) among the ranks "
                "that joined: every node needs one"
            )
        sock, _ = _join(
            "127.0.0.1",
            int(port),
            self._hello("local", self.local_rank, self.local_size, None),
            deadline,
            name(self.local_rank),
            name(0),
        )
        self._local = _Star(self.local_rank, self.local_size, name, self._timeout, hub=sock)

    def _hello(self, group: str, member: int, size: int, local_port: int | None) -> dict[str, Any]:
        return {
            "group": group,
            "member": member,
            "size": size,
            "cross_rank": self.cross_rank,
            "local_port": local_port,
            "secret": self._secret,
        }

    # -- accessors (Determined names) ----------------------------------------------------------

    def get_rank(self) -> int:
        return self.rank

    def get_size(self) -> int:
        return self.size

    def get_local_rank(self) -> int:
        return self.local_rank

    def get_local_size(self) -> int:
        return self.local_size

    def get_cross_rank(self) -> int:
        return self.cross_rank

    def get_cross_size(self) -> int:
        return self.cross_size

    # -- collectives --------------------------------------------------------------------------

    def allgather(self, stuff: T) -> list[T]:
        """Every rank's ``stuff``, in rank order, on every rank."""
        if self._global is None:
            return [stuff]
        return self._global.allgather(stuff)

    def gather(self, stuff: T) -> list[T] | None:
        """Every rank's ``stuff`` in rank order on the chief; None on the other ranks."""
        if self._global is None:
            return [stuff]
        return self._global.gather(stuff)

    def broadcast(self, stuff: T) -> T:
        """The chief's ``stuff`` on every rank (what the others pass is ignored)."""
        if self._global is None:
            return stuff
        result: T = self._global.broadcast(stuff)
        return result

    def allgather_local(self, stuff: T) -> list[T]:
        """Every local rank's ``stuff``, in local rank order, on every process of this node."""
        if self._local is None:
            return [stuff]
        return self._local.allgather(stuff)

    def gather_local(self, stuff: T) -> list[T] | None:
        """This node's ``stuff`` in local rank order on its local chief; None elsewhere."""
        if self._local is None:
            return [stuff]
        return self._local.gather(stuff, "gather_local")

    def broadcast_local(self, stuff: T) -> T:
        """The local chief's ``stuff`` on every process of this node."""
        if self._local is None:
            return stuff
        result: T = self._local.broadcast(stuff, "broadcast_local")
        return result

    def close(self) -> None:
        for star in (self._local, self._global):
            if star is not None:
                star.close()


def _send_welcome(sock: socket.socket, welcome: dict[str, Any], member: str) -> None:
    try:
        _send_frame(sock, json.dumps(welcome).encode())
    except OSError as exc:
        raise DistributedError(
            f"{member} left while the ranks were meeting ({exc}): it has probably exited"
        ) from exc


def _rank_name(rank: int) -> str:
    return "the chief (rank 0)" if rank == 0 else f"rank {rank}"


def _env_port() -> int:
    env = os.environ
    if env.get(TrialEnv.RENDEZVOUS_PORT):
        return int(env[TrialEnv.RENDEZVOUS_PORT])
    if env.get("MASTER_PORT"):
        # Launched by torchrun outside assay: the port after torch's own.
        return int(env["MASTER_PORT"]) + 1
    return DEFAULT_PORT


def from_environment() -> DistributedContext | None:
    """The context the launcher's variables describe, or None when this is the only process."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return None
    return DistributedContext.from_torch_distributed()
