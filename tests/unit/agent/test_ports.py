"""Probing the rendezvous ports on the agent's host: a port some program holds is busy."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from assay.agent._ports import busy_ports, free_pair, port_free, with_ports
from assay.protocol import RankLayout


@pytest.fixture
def listener() -> Iterator[int]:
    """A port another program listens on (on loopback only)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def layout(port: int) -> RankLayout:
    return RankLayout(
        world_size=2,
        node_rank=0,
        num_nodes=1,
        first_rank=0,
        local_world_size=2,
        master_addr="127.0.0.1",
        master_port=port,
        rendezvous_port=port + 1,
    )


def test_a_port_someone_listens_on_is_busy_even_on_one_address(listener: int) -> None:
    assert not port_free(listener)


def test_a_port_bound_without_listening_is_busy() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        assert not port_free(s.getsockname()[1])


def test_a_port_freed_again_is_free(listener: int) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert port_free(port)


@pytest.mark.parametrize("port", [0, -1, 65536, 70000])
def test_ports_outside_the_tcp_range_are_never_free(port: int) -> None:
    assert not port_free(port)


@pytest.fixture
def lone_listener() -> Iterator[int]:
    """A port another program listens on whose neighbours are free: other tests running beside
    this one take ephemeral ports too (one once took the neighbour of the first port tried)."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen()
            port: int = s.getsockname()[1]
            if port_free(port - 1) and port_free(port + 1):
                yield port
                return
    pytest.fail("no listening port with free neighbours in 100 tries")


def test_busy_ports_names_whichever_of_the_pair_is_held(lone_listener: int) -> None:
    assert busy_ports(layout(lone_listener)) == [lone_listener]
    assert busy_ports(layout(lone_listener - 1)) == [lone_listener]


def test_a_free_pair_is_two_adjacent_free_ports() -> None:
    port = free_pair()
    assert port_free(port) and port_free(port + 1)


def test_with_ports_moves_both_rendezvous_ports_and_nothing_else() -> None:
    moved = with_ports(layout(29500), 41000)
    assert (moved.master_port, moved.rendezvous_port) == (41000, 41001)
    assert moved.to_dict() == {
        **layout(29500).to_dict(),
        "master_port": 41000,
        "rendezvous_port": 41001,
    }
