"""The line a trial process writes on its standard error when the harness knows why it cannot
go on (its checkpoint storage cannot be used): its agent reports the words after the prefix as
the exit's reason, which the master puts in the trial's message, masked with its experiment's
secrets like any line the trial writes."""

from __future__ import annotations

FAILURE_PREFIX = "assay: the trial cannot go on: "
MAX_FAILURE = 1000
"""The most characters of a reason kept: the message is one line, not a log."""


def failure_line(reason: str) -> str:
    """The line that says ``reason`` (on one line, cut to :data:`MAX_FAILURE`)."""
    return FAILURE_PREFIX + " ".join(reason.split())[:MAX_FAILURE]


def failure_reason(line: str) -> str | None:
    """The reason ``line`` says, or None when it is not a failure line (a distributed trial's
    launcher may have put a rank's tag before it)."""
    at = line.find(FAILURE_PREFIX)
    if at < 0:
        return None
    return " ".join(line[at + len(FAILURE_PREFIX) :].split())[:MAX_FAILURE] or None
