"""Whether a TCP port is free on this host, and a free pair of ports when one is not.

The master picks a distributed trial's rendezvous ports (``MASTER_PORT`` and the one after it)
from what it knows of its own allocations; it cannot see a port some other program on the
agent's host holds. The agent probes them just before it starts the trial, so that a busy port
is swapped or named instead of failing the ranks' rendezvous obscurely.
"""

from __future__ import annotations

import socket
from dataclasses import replace

from assay.protocol import RankLayout

_ATTEMPTS = 64


def port_free(port: int) -> bool:
    """Whether a server could listen on ``port`` on every interface of this host now.

    Binds the IPv4 wildcard address with ``SO_REUSEADDR``, as torch.distributed's store does:
    a connection lingering in TIME_WAIT does not make the port busy, but a socket bound to it
    does, on any address (Linux refuses the wildcard bind then, an IPv6 one included)."""
    if not 0 < port < 65536:
        return False
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def busy_ports(layout: RankLayout) -> list[int]:
    """The layout's rendezvous ports that something on this host already holds."""
    return [p for p in (layout.master_port, layout.rendezvous_port) if not port_free(p)]


def free_pair() -> int:
    """A port that is free together with the one after it.

    Taken from the kernel's ephemeral range, which lies apart from the ports the master hands
    out (from 29500 up), so a swapped pair does not land on another allocation's."""
    for _ in range(_ATTEMPTS):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("0.0.0.0", 0))
            port: int = s.getsockname()[1]
        if port_free(port) and port_free(port + 1):
            return port
    raise OSError(f"found no two adjacent free TCP ports in {_ATTEMPTS} attempts")


def with_ports(layout: RankLayout, port: int) -> RankLayout:
    """``layout`` meeting on ``port`` (``MASTER_PORT``) and the one after it."""
    return replace(layout, master_port=port, rendezvous_port=port + 1)
