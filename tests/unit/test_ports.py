"""A port picked for a server to listen on later lies where no outgoing connection takes it."""

from __future__ import annotations

import random
import socket
from pathlib import Path

import pytest

from assay import ports


def test_a_picked_port_lies_outside_the_ephemeral_range_and_the_task_ports() -> None:
    low, high = ports.ephemeral_range()
    picked = [ports.free_port() for _ in range(200)]
    for port in picked:
        assert not low <= port <= high, port
        assert not 20000 <= port < 30000, port
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))  # free when it was handed out
    assert len(set(picked)) > 150, "picks spread over the range"


def test_a_port_someone_listens_on_is_not_handed_out() -> None:
    with socket.socket() as held:
        for port in range(15000, 20000):  # in the first span, so its index there is known
            try:
                held.bind(("127.0.0.1", port))
                break
            except OSError:
                continue
        held.listen()

        class Aimed(random.Random):
            """Draws the held port first (its index in the first span), then at random."""

            first = True

            def randrange(self, *args: int) -> int:  # type: ignore[override]
                if self.first:
                    self.first = False
                    return port - 10000
                return int(super().randrange(*args))

        assert ports.free_port(rng=Aimed()) != port


def test_ports_asked_for_together_differ() -> None:
    for _ in range(50):
        first, second = ports.free_ports(2)
        assert first != second


def test_with_no_room_outside_the_ephemeral_range_the_kernel_picks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wide = tmp_path / "ip_local_port_range"
    wide.write_text("1024\t65535\n")
    monkeypatch.setattr(ports, "_RANGE_FILE", wide)
    assert ports.ephemeral_range() == (1024, 65535)
    assert 1024 <= ports.free_port() <= 65535


def test_an_unreadable_range_is_taken_as_linuxs_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ports, "_RANGE_FILE", tmp_path / "missing")
    assert ports.ephemeral_range() == (32768, 60999)
