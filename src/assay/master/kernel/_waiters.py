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
        self._waiting: dict[Hashable, int] = {}
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
        self._waiting[key] = self._waiting.get(key, 0) + 1
        try:
            await asyncio.wait_for(event.wait(), timeout)
        except TimeoutError:
            return self._versions.get(key, 0) != since
        finally:
            left = self._waiting[key] - 1
            if left:
                self._waiting[key] = left
            else:
                del self._waiting[key]
                if self._events.get(key) is event:
                    del self._events[key]
        return True

    def prune(self) -> None:
        """Drop the records of keys nobody waits on, so they do not pile up over the life of
        the master. A waiter that read a dropped version sees a change and checks again."""
        for key in [k for k in self._versions if k not in self._events]:
            del self._versions[key]
