"""When a notebook is idle, as Determined's ``notebook_idle_type`` defines it: pure functions of
what JupyterLab's REST API says (``/api/kernels``, ``/api/terminals``, ``/api/status``) and of
the time, so the launcher only fetches and acts."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from assay.protocol import IdleType


@dataclass(frozen=True)
class Usage:
    """What JupyterLab reported at one look."""

    kernels: list[dict[str, Any]] = field(default_factory=list)
    terminals: list[dict[str, Any]] = field(default_factory=list)
    last_activity: float | None = None
    """``/api/status``'s last activity (any request, kernel or terminal), in epoch seconds."""


def parse_time(text: object) -> float | None:
    """Epoch seconds of a JupyterLab timestamp (ISO 8601, ``Z`` for UTC); None if not one."""
    if not isinstance(text, str):
        return None
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.timestamp()


def is_idle(kind: IdleType, usage: Usage) -> bool:
    """Whether ``usage`` counts as idle for ``kind`` (``activity`` is judged by time instead:
    see :class:`IdleClock`)."""
    if kind == IdleType.KERNELS_OR_TERMINALS:
        return not usage.kernels and not usage.terminals
    if kind == IdleType.KERNEL_CONNECTIONS:
        # The terminals API cannot say whether a terminal has a client: a running one is use.
        connected = sum(int(k.get("connections") or 0) for k in usage.kernels)
        return connected == 0 and not usage.terminals
    return False


@dataclass
class IdleClock:
    """How long a notebook has been idle, from successive looks at it: since the last look
    that saw it in use (or since it started)."""

    kind: IdleType
    last_used: float

    def look(self, usage: Usage, now: float) -> float:
        """Record a look at ``now``; how long the notebook has been idle (0 when in use)."""
        if self.kind == IdleType.ACTIVITY:
            # A kernel that is busy right now is in use whatever its last message's time.
            if any(k.get("execution_state") == "busy" for k in usage.kernels):
                self.last_used = now
                return 0.0
            times = [usage.last_activity]
            times += [parse_time(k.get("last_activity")) for k in usage.kernels]
            times += [parse_time(t.get("last_activity")) for t in usage.terminals]
            self.last_used = max([self.last_used, *(t for t in times if t is not None)])
        elif not is_idle(self.kind, usage):
            self.last_used = now
        return max(0.0, now - self.last_used)
