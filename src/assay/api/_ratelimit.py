"""A sliding-window rate limit per key (a user name, an address): pure logic on a given clock.

Each key keeps the times of its allowed attempts inside the window, so an attempt is allowed
exactly when fewer than ``limit`` were allowed in the ``window_s`` seconds before it; refused
attempts are not counted, so a client that keeps trying is let in again once its old attempts
age out. Memory stays bounded under a flood of distinct keys: keys with no attempt left in the
window are dropped whenever the table has doubled since the last sweep. Not thread-safe; the
master calls it from its event loop.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

_MIN_SWEEP = 1024


class RateLimiter:
    """At most ``limit`` allowed attempts per key in any ``window_s`` seconds of ``clock``."""

    def __init__(self, limit: int, window_s: float, clock: Callable[[], float]) -> None:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        if not window_s > 0:
            raise ValueError(f"window_s must be > 0, got {window_s}")
        self.limit = limit
        self.window_s = window_s
        self._clock = clock
        self._attempts: dict[str, deque[float]] = {}
        self._sweep_at = _MIN_SWEEP

    def allow(self, key: str) -> bool:
        """Whether an attempt for ``key`` may go on now; an allowed one is counted."""
        now = self._clock()
        times = self._current(key, now)
        if len(times) >= self.limit:
            return False
        times.append(now)
        if key not in self._attempts:
            self._attempts[key] = times
            if len(self._attempts) >= self._sweep_at:
                self._sweep(now)
        return True

    def retry_after(self, key: str) -> float:
        """Seconds until an attempt for ``key`` would be allowed; 0 when it would be now."""
        now = self._clock()
        times = self._current(key, now)
        if len(times) < self.limit:
            return 0.0
        return max(0.0, times[0] + self.window_s - now)

    def __len__(self) -> int:
        """How many keys are tracked (some may have aged out since the last sweep)."""
        return len(self._attempts)

    def _current(self, key: str, now: float) -> deque[float]:
        times = self._attempts.get(key)
        if times is None:
            return deque()
        while times and times[0] + self.window_s <= now:
            times.popleft()
        if not times:
            del self._attempts[key]
        return times

    def _sweep(self, now: float) -> None:
        for key in list(self._attempts):
            self._current(key, now)
        self._sweep_at = max(_MIN_SWEEP, 2 * len(self._attempts))
