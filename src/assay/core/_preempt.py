"""``ctx.preempt``: has the master asked this trial to stop (pause, preemption, early stop)?"""

from __future__ import annotations

import enum
import logging
import threading

from assay.core._session import MasterSession
from assay.errors import AssayError

log = logging.getLogger("assay.core")

LONG_POLL_SECONDS = 60.0


class PreemptMode(enum.Enum):
    """Which processes ask the master (kept for Core API compatibility)."""

    WorkersAskChief = "WORKERS_ASK_CHIEF"
    ChiefOnly = "CHIEF_ONLY"
    WorkersAskMaster = "WORKERS_ASK_MASTER"


class PreemptContext:
    """``should_preempt()`` turns true once the master wants the slots back.

    A background thread long-polls the master, so the check itself is a flag read: call it as
    often as every batch. On a preemption the code should checkpoint and exit; its trial resumes
    from that checkpoint later.
    """

    def __init__(self, session: MasterSession | None, allocation_id: str) -> None:
        self._session = session
        self._path = f"/api/v1/allocations/{allocation_id}/signals/preemption"
        self._flag = threading.Event()
        self._closed = threading.Event()
        self._acknowledged = False
        self._thread: threading.Thread | None = None
        if session is not None:
            self._thread = threading.Thread(target=self._watch, name="assay-preempt", daemon=True)
            self._thread.start()

    def _watch(self) -> None:
        assert self._session is not None
        while not self._closed.is_set():
            try:
                answer = self._session.call(
                    lambda h: h.get(
                        self._path,
                        params={"timeout_seconds": LONG_POLL_SECONDS},
                        timeout=LONG_POLL_SECONDS + 30,
                    )
                )
            except AssayError as exc:
                if not self._closed.is_set():
                    log.warning("preemption check failed: %s", exc)
                    self._closed.wait(1.0)
                continue
            if answer.get("preempt"):
                self._flag.set()
                return

    def should_preempt(self, auto_ack: bool = True) -> bool:
        preempt = self._flag.is_set()
        if preempt and auto_ack:
            self._acknowledged = True
        return preempt

    def acknowledge_preemption_signal(self) -> None:
        self._acknowledged = True

    def _simulate(self) -> None:
        """Make :meth:`should_preempt` true (for tests of user code off-cluster)."""
        self._flag.set()

    def close(self) -> None:
        self._closed.set()
