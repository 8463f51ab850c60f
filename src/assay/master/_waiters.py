"""Long-poll support: wait until something about a key changes, without missing a change.

A waiter reads a key's version *before* checking the state it cares about, then waits only if the
version is still the same, so a notification that lands between the check and the wait is never
lost.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable


class Waiters:
    def __init__(self) -> None:
        self._versions: dict[Hashable, int] = {}
        self._events: dict[Hashable, asyncio.Event] = {}
        self.closed = False

    def close(self) -> None:
        """Wake every waiter now and from then on: the master is going away."""
        self.closed = True
        for event in self._events.values():
            event.set()
        self._events.clear()

    def version(self, key: Hashable) -> int:
        return self._versions.get(key, 0)

    def notify(self, key: Hashable) -> None:
        self._versions[key] = self._versions.get(key, 0) + 1
        event = self._events.pop(key, None)
        if event is not None:
            event.set()

    async def wait(self, key: Hashable, since: int, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for ``key`` to move past version ``since``.

        Returns True if it changed.
        """
        if self._versions.get(key, 0) != since or self.closed:
            return True
        if timeout <= 0:
            return False
        event = self._events.get(key)
        if event is None:
            event = self._events[key] = asyncio.Event()
        try:
            await asyncio.wait_for(event.wait(), timeout)
        except TimeoutError:
            return self._versions.get(key, 0) != since
        return True

    def forget(self, key: Hashable) -> None:
        self._versions.pop(key, None)
        event = self._events.pop(key, None)
        if event is not None:
            event.set()
