"""Following through a master restart: what a followed command does while the master is away.

A master restarts in seconds and loses nothing (every state change is in its database), so a
command following an experiment, a trial's log or a job must not end when the master goes away
for a moment: it says so on stderr in one line, retries with backoff, says when it is back, and
goes on from where it was (log lines after the last one shown: none twice, none lost).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

from assay.cli._common import err_console
from assay.errors import AssayError, MasterUnreachable

if TYPE_CHECKING:
    from assay import rest
    from assay.client import Client

T = TypeVar("T")

PATIENCE = 600.0
"""How long a follow keeps trying a master that does not answer (``$ASSAY_FOLLOW_PATIENCE``
seconds, when set): a restart takes seconds, an upgrade minutes."""

PATIENCE_ENV = "ASSAY_FOLLOW_PATIENCE"

FIRST_DELAY = 0.25
MAX_DELAY = 2.0
"""Tries at most this far apart: a master back is seen within two seconds."""

DETACHED_STATUS = 130
"""What a shell reports for a command ended by Ctrl-C (128 + SIGINT)."""


def retryable(exc: AssayError) -> bool:
    """Whether ``exc`` may pass once the master is back: nothing answered, or the master (or a
    proxy before it) failed on its side. A refusal (4xx) says the request itself is wrong."""
    return isinstance(exc, MasterUnreachable) or exc.status >= 500


def patience() -> float:
    raw = os.environ.get(PATIENCE_ENV, "")
    try:
        return max(0.0, float(raw)) if raw.strip() else PATIENCE
    except ValueError:
        return PATIENCE


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f}s"
    return f"{seconds / 60:.0f} minutes"


class Reconnector:
    """Retries what a follow asks of the master while the master is away.

    ``resume`` is the command that takes the follow up again, named when it gives up.
    Until the master has answered once (``reached``), a failure is reported at once: a
    follow started with no master there is a mistake to say, not an outage to wait out."""

    def __init__(self, url: str, resume: str, *, reached: bool = False) -> None:
        self.url = url
        self.resume = resume
        self.reached = reached
        self.patience = patience()
        self.down_since: float | None = None
        self._delay = FIRST_DELAY
        self.say: Callable[[str], None] = _on_stderr
        """Where the notes go: stderr, or above a live view (which a write to stderr would
        tear: the view would be drawn again below its old self)."""

    @property
    def down(self) -> bool:
        return self.down_since is not None

    def failed(self, exc: AssayError) -> None:
        """After a failed request: wait before the next try, or raise when ``exc`` is not the
        master being away or it has been away too long."""
        if not (self.reached and retryable(exc)):
            raise exc
        now = time.monotonic()
        if self.down_since is None:
            self.down_since = now
            # The URL is said once, before the reason.
            reason = exc.message.replace(f" at {self.url}", "")
            self.say(
                f"master unreachable at {self.url}: {reason}; retrying for up to "
                f"{_duration(self.patience)}..."
            )
        elif now - self.down_since >= self.patience:
            raise AssayError(
                f"gave up following: the master at {self.url} has not answered for "
                f"{_duration(now - self.down_since)} ({exc.message}); once it is back, "
                f"`{self.resume}` takes it up again"
            ) from exc
        time.sleep(self._delay)
        self._delay = min(self._delay * 2, MAX_DELAY)

    def ok(self) -> None:
        """After a request that got an answer: say the master is back if it was away."""
        self.reached = True
        if self.down_since is None:
            return
        away = time.monotonic() - self.down_since
        self.down_since = None
        self._delay = FIRST_DELAY
        self.say(f"reconnected to the master at {self.url} after {_duration(away)}")

    def call(self, fn: Callable[[], T]) -> T:
        """``fn()``, tried until the master answers it."""
        while True:
            try:
                value = fn()
            except AssayError as exc:
                self.failed(exc)
                continue
            self.ok()
            return value


def _on_stderr(text: str) -> None:
    err_console.print(text, markup=False, highlight=False, soft_wrap=True)


def trial_log_stream(
    c: Client, trial_id: int, rc: Reconnector, *, after: int = 0
) -> Iterator[rest.LogEntry]:
    """The trial's log lines after line ``after`` as they come until it ends, across master
    restarts: a broken stream is opened again after the last line shown."""
    while True:
        if rc.down or not rc.reached:
            # Says the master is there (or back) even when no line comes for a while.
            rc.call(lambda: c.trial(trial_id))
        try:
            for entry in c.follow_logs(trial_id, after=after):
                after = entry.id
                yield entry
            return
        except AssayError as exc:
            rc.failed(exc)


def task_log_stream(
    c: Client,
    task_id: int,
    rc: Reconnector,
    *,
    role: str | None = None,
    index: int | None = None,
    after: int = 0,
) -> Iterator[rest.TaskLogEntry]:
    """:func:`trial_log_stream` for a job's log."""
    while True:
        if rc.down or not rc.reached:
            rc.call(lambda: c.task(task_id))
        try:
            for entry in c.follow_task_logs(task_id, role=role, index=index, after=after):
                after = entry.id
                yield entry
            return
        except AssayError as exc:
            rc.failed(exc)


@contextmanager
def detached_on_interrupt(what: str, resume: str) -> Iterator[None]:
    """Ctrl-C while following ``what`` (``experiment 4``) leaves it running: say so on stderr
    with the command that re-attaches, and exit 130 without a traceback."""
    try:
        yield
    except KeyboardInterrupt:
        err_console.print(
            f"\ndetached; {what} keeps running (`{resume}` re-attaches)",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        raise SystemExit(DETACHED_STATUS) from None
