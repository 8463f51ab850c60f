"""Schemathesis hooks for the reliability run's fuzzing (``SCHEMATHESIS_HOOKS`` names this
file): long-polls answer at once, log streams are read as pages (a followed stream of a live
trial never ends), and a context archive part is sent as the bytes a client uploads."""

from __future__ import annotations

from typing import Any

import schemathesis

LONG_POLL = 0.05
"""Seconds a fuzzed long-poll may wait: the generated timeouts go up to ten minutes."""

LONG_POLLS = {
    "/wait": "timeout",
    "/searcher/operation": "timeout",
    "/signals/preemption": "timeout_seconds",
}
"""The long-poll routes (by the end of their path) and their timeout parameter."""


def _number(value: Any) -> float:
    if isinstance(value, list) and value:
        value = value[-1]
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    query: dict[str, Any] = case.query if case.query is not None else {}
    for suffix, name in LONG_POLLS.items():
        if case.path.endswith(suffix) and (name not in query or _number(query[name]) > LONG_POLL):
            query[name] = LONG_POLL
    if "follow" in query:
        query["follow"] = "false"
    case.query = query


@schemathesis.serializer("application/gzip")
def _as_uploaded(context: Any, value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()
