"""A trial's log lines as Determined's clients stream them (``v1TrialLogsResponse``), and the
filters ``det trial logs`` and the SDK's ``Trial.iter_logs`` send, applied to assay's lines."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from assay import rest
from assay.errors import InvalidRequest
from assay.rest.determined._common import DetResource, timestamp


class LogLevel(StrEnum):
    """``v1LogLevel``, lowest first (a client asks for a level and those above it)."""

    UNSPECIFIED = "LOG_LEVEL_UNSPECIFIED"
    TRACE = "LOG_LEVEL_TRACE"
    DEBUG = "LOG_LEVEL_DEBUG"
    INFO = "LOG_LEVEL_INFO"
    WARNING = "LOG_LEVEL_WARNING"
    ERROR = "LOG_LEVEL_ERROR"
    CRITICAL = "LOG_LEVEL_CRITICAL"


LOG_SOURCE = "agent"
"""Where Determined says each of a trial's lines came from: assay's agents ship them all."""


class TrialLog(DetResource):
    """``v1TrialLogsResponse``: one line. ``message`` is what ``det trial logs`` prints as it
    is (so it ends with a newline); ``log`` is the line the process wrote. The container is
    the run (assay's allocation) that wrote it."""

    id: str
    trial_id: int
    timestamp: str
    level: LogLevel
    message: str
    log: str
    agent_id: str | None = None
    container_id: str
    rank_id: int
    source: str = LOG_SOURCE
    stdtype: str


_LEVEL_PREFIX = re.compile(r"\s*(TRACE|DEBUG|INFO|WARN|WARNING|ERROR|CRITICAL)\b\s*:")


def level_of(line: str) -> LogLevel:
    """A line's level as Determined reads one: the level Python's logging (and most loggers)
    begin a line with, such as ``ERROR:``; INFO for any other line."""
    found = _LEVEL_PREFIX.match(line)
    if found is None:
        return LogLevel.INFO
    name = found.group(1)
    return LogLevel.WARNING if name == "WARN" else LogLevel(f"LOG_LEVEL_{name}")


def trial_log(entry: rest.LogEntry, agents: Mapping[str, str]) -> TrialLog:
    """One of assay's lines as Determined's; ``agents`` names the agent each allocation ran on
    (its first, for a run over several)."""
    level = level_of(entry.line)
    line = entry.line.rstrip("\n")
    when = timestamp(entry.time)
    return TrialLog(
        id=str(entry.id),
        trial_id=entry.trial_id,
        timestamp=when,
        level=level,
        message=f"[{when}] [rank={entry.rank}] || {line}\n",
        log=line + "\n",
        agent_id=agents.get(entry.allocation_id),
        container_id=entry.allocation_id,
        rank_id=entry.rank,
        stdtype=entry.stream,
    )


def parse_time(value: str, name: str) -> float:
    """An RFC 3339 time a client sends as ``name``, as seconds since the epoch."""
    try:
        shown = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise InvalidRequest(
            f"{name} {value!r} is no RFC 3339 time: give one such as 2021-10-26T23:17:12Z"
        ) from None
    if shown.tzinfo is None:
        raise InvalidRequest(
            f"{name} {value!r} has no time zone: give one such as 2021-10-26T23:17:12Z"
        )
    return shown.timestamp()


@dataclass(frozen=True)
class LogQuery:
    """Which lines a request asks for: each filter given (a non-empty one) must match."""

    agent_ids: frozenset[str] = frozenset()
    container_ids: frozenset[str] = frozenset()
    rank_ids: frozenset[int] = frozenset()
    stdtypes: frozenset[str] = frozenset()
    sources: frozenset[str] = frozenset()
    levels: frozenset[LogLevel] = frozenset()
    after: float | None = None
    """Only lines written after this time."""
    before: float | None = None
    """Only lines written at or before this time."""
    search: str | None = None
    regex: re.Pattern[str] | None = None

    def matches(self, log: TrialLog, time: float) -> bool:
        checks = (
            (self.agent_ids, log.agent_id),
            (self.container_ids, log.container_id),
            (self.rank_ids, log.rank_id),
            (self.stdtypes, log.stdtype),
            (self.sources, log.source),
            (self.levels, log.level),
        )
        if any(wanted and value not in wanted for wanted, value in checks):
            return False
        if self.after is not None and time <= self.after:
            return False
        if self.before is not None and time > self.before:
            return False
        if self.regex is not None:
            return self.regex.search(log.log) is not None
        return self.search is None or self.search in log.log


def search_pattern(text: str) -> re.Pattern[str]:
    """``searchText`` with ``enableRegex``: a regular expression, refused in one line if it is
    none."""
    try:
        return re.compile(text)
    except re.error as exc:
        raise InvalidRequest(f"searchText {text!r} is no regular expression: {exc}") from None
