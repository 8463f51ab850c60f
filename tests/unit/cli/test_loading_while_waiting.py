"""What a command loads while it waits for the master (``loading_while``) is loaded by the time
the wait ends; a load that fails is left, silently, to the code that needs it."""

from __future__ import annotations

import threading

import pytest

from assay.cli._common import loading_while


def test_the_loads_run_beside_the_block_and_are_done_when_it_ends() -> None:
    ran: list[str] = []
    waiting = threading.Event()

    def load() -> None:
        waiting.wait(10)  # runs while the block is still waiting
        ran.append("loaded")

    with loading_while(load):
        ran.append("waited")
        waiting.set()
    assert ran == ["waited", "loaded"]


def test_a_load_that_fails_is_silent_and_the_block_goes_on(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def broken() -> None:
        raise ImportError("no such module")

    with loading_while(broken, lambda: None):
        answer = 42
    assert answer == 42
    assert capsys.readouterr() == ("", "")
