"""A free TCP port for a server to listen on, chosen where outgoing connections never land.

A port the kernel picks (a bind to port 0) comes from its ephemeral range: the range every
outgoing connection's local port is drawn from too. A server given such a port that stops and
starts again on it (a master restarted, a rendezvous bound after it was chosen) can find it
taken meanwhile by some connection's local end, and fails with "address already in use". Ports
below that range are only ever taken by a bind, so one found free stays free until a server
listens on it.

Ports that assay's masters hand to tasks by default (``task_port_base`` 20000 up to the
``rendezvous_port_base`` 29500 and the gangs' ports above it) are left out as well.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

__all__ = ["ephemeral_range", "free_port", "free_ports"]

_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_DEFAULT_EPHEMERAL = (32768, 60999)
"""Linux's default, used where the kernel does not say (macOS's, 49152-65535, lies inside)."""
_SPANS = ((10000, 20000), (30000, 65536))
"""Where to look, before the ephemeral range is taken out: above the ports of services most
machines run, and outside the ports masters give tasks and gangs by default."""
_TRIES = 64


def ephemeral_range() -> tuple[int, int]:
    """The kernel's range for outgoing connections' local ports, both ends included."""
    try:
        low, high = (int(part) for part in _RANGE_FILE.read_text().split())
    except (OSError, ValueError):
        return _DEFAULT_EPHEMERAL
    return low, high


def _candidates() -> list[range]:
    low, high = ephemeral_range()
    out: list[range] = []
    for start, stop in _SPANS:
        # Each span less the part the ephemeral range covers (it may cut one in two).
        for part in (range(start, min(stop, low)), range(max(start, high + 1), stop)):
            if len(part):
                out.append(part)
    return out


def free_port(host: str = "127.0.0.1", rng: random.Random | None = None) -> int:
    """A port no one listens on at ``host`` now, outside the ephemeral range where the machine
    leaves room for that; the kernel's own pick where it does not."""
    return free_ports(1, host, rng)[0]


def free_ports(count: int, host: str = "127.0.0.1", rng: random.Random | None = None) -> list[int]:
    """``count`` different ports, each as :func:`free_port` picks it."""
    out: list[int] = []
    while len(out) < count:
        port = _pick(host, rng or random.Random())
        if port not in out:
            out.append(port)
    return out


def _pick(host: str, rng: random.Random) -> int:
    spans = _candidates()
    total = sum(len(span) for span in spans)
    for _ in range(_TRIES if total else 0):
        port = _nth(spans, rng.randrange(total))
        if _bindable(host, port):
            return port
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _nth(spans: list[range], index: int) -> int:
    """The ``index``-th port of ``spans`` taken one after the other."""
    for span in spans:
        if index < len(span):
            return span[index]
        index -= len(span)
    raise IndexError(index)


def _bindable(host: str, port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True
