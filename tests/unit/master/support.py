"""Helpers the master's tests share."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from assay.master.testing import AgentStandIn

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


Recorder = AgentStandIn
"""Stands in for an agent's WebSocket: keeps what the master sends."""


class Clock:
    """The master's clock, moved by hand (``clock.now += 60``)."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
