"""The trial's line to the master: retried calls, and a background reporter for metrics.

Reports must survive a master restart: calls are retried with backoff until the master answers
(or the deadline passes), and every report carries its own idempotency key, so a retry after a
lost answer never stores a result twice.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

from assay.client import HttpSession
from assay.core._relay import Relayed
from assay.errors import AssayError, Fenced, MasterUnreachable

log = logging.getLogger("assay.core")

T = TypeVar("T")

RETRY_DEADLINE = 600.0
"""How long a report keeps trying while the master is away (a master restart takes seconds)."""


FENCED_EXIT_CODE = 1
"""How a process the master fenced off ends (the master, having given its allocation up, never
reads it)."""


def _retryable(exc: AssayError) -> bool:
    return isinstance(exc, MasterUnreachable) or exc.status >= 500


def stop_fenced(exc: Fenced) -> NoReturn:
    """End this process now: the master gave its allocation up (its agent was lost) and may run
    the trial elsewhere, so it must not write another file. From any thread, at once: no
    exception the training code could catch, no clean-up that could write a checkpoint."""
    with_reason = f"assay: {exc.message}; stopping this process now\n"
    try:
        sys.stderr.write(with_reason)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass  # a closed or broken stderr must not keep the process alive
    os._exit(FENCED_EXIT_CODE)


class MasterSession:
    def __init__(self, url: str, token: str) -> None:
        self.http = HttpSession(url, token=token, timeout=60.0)
        self.token = token

    def call(self, fn: Callable[[HttpSession], T], *, deadline: float = RETRY_DEADLINE) -> T:
        """``fn(http)``, retried with backoff while the master is unreachable or failing."""
        give_up = time.monotonic() + deadline
        delay = 0.05
        while True:
            try:
                return fn(self.http)
            except Fenced as exc:
                stop_fenced(exc)
            except AssayError as exc:
                if not _retryable(exc) or time.monotonic() + delay > give_up:
                    raise
                log.debug("master call failed (%s); retrying in %.2fs", exc, delay)
                time.sleep(delay)
                delay = min(delay * 2, 2.0)


class Reporter:
    """Sends metric reports from a background thread, in batches, in order.

    :meth:`put` only appends to a queue, so reporting costs the training loop microseconds.
    The first report goes out at once; after each send the thread waits ``INTERVAL`` (unless
    asked to flush), so a loop reporting every step pays for one request per interval, not one
    per step.
    """

    MAX_BATCH = 1000
    INTERVAL = 0.25

    def __init__(self, session: MasterSession, trial_id: int) -> None:
        self.session = session
        self.trial_id = trial_id
        self.path = f"/api/v1/trials/{trial_id}/metrics"
        self.relayed = Relayed(session.token)
        """The agent's relay, while it answers: it carries this trial's reports to the master
        with its other trials', so a large cluster's master is not sent a request per report."""
        self._queue: deque[dict[str, Any]] = deque()
        self._wake = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._lock = threading.Lock()
        self._urgent = threading.Event()
        self._closed = False
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="assay-reporter", daemon=True)
        self._thread.start()

    def put(self, report: dict[str, Any]) -> None:
        if self._failure is not None:
            raise RuntimeError(f"metric reporting failed: {self._failure}") from self._failure
        with self._lock:
            self._queue.append(report)
            self._idle.clear()
        self._wake.set()

    def _run(self) -> None:
        # Here, while the trial trains, rather than in its first report's round trip (the last
        # thing a short trial does before it ends).
        self.session.http.warm()
        while True:
            self._wake.wait()
            self._wake.clear()
            while self._queue:
                batch = [self._queue[0]]
                for i in range(1, min(len(self._queue), self.MAX_BATCH)):
                    batch.append(self._queue[i])
                try:
                    self._send(batch)
                except BaseException as exc:
                    log.error("could not report metrics: %s", exc)
                    self._failure = exc
                    self._queue.clear()
                    break
                for _ in batch:
                    self._queue.popleft()
                if not self._closed:
                    self._urgent.wait(self.INTERVAL)
            with self._lock:
                if not self._queue:
                    self._idle.set()
            if self._closed and not self._queue:
                return

    def _send(self, batch: list[dict[str, Any]]) -> None:
        self.session.call(
            lambda http: self.relayed.post(
                http, self.path, {"reports": batch}, self.trial_id, reports=batch
            )
        )

    def flush(self, timeout: float = RETRY_DEADLINE) -> None:
        """Block until every report put so far has been stored by the master."""
        self._urgent.set()
        done = self._idle.wait(timeout)
        self._urgent.clear()
        if not done:
            raise TimeoutError(f"metric reports not delivered within {timeout:.0f}s")
        if self._failure is not None:
            raise RuntimeError(f"metric reporting failed: {self._failure}") from self._failure

    def close(self, timeout: float = RETRY_DEADLINE) -> None:
        self._closed = True
        self._urgent.set()
        self._wake.set()
        self._thread.join(timeout)
        self.relayed.close()
