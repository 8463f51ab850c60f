"""``ctx.preempt``: has the master asked this trial to stop (pause, preemption, early stop)?"""

from __future__ import annotations

import enum
import logging
import os
import threading

from assay.core._distributed import DistributedContext
from assay.core._relay import RelayClient, RelayGone
from assay.core._session import RETRY_DEADLINE, MasterSession
from assay.errors import AssayError
from assay.protocol import RELAY_ENV, PreemptionAnswer

log = logging.getLogger("assay.core")

LONG_POLL_SECONDS = 60.0
FIRST_ASK_SECONDS = 5.0
"""How long the first ``should_preempt()`` may wait for the master's answer."""


class PreemptMode(enum.Enum):
    """Which processes of a distributed trial ask the master, and who may call
    ``should_preempt()``: every rank together, getting the chief's answer (``WorkersAskChief``,
    the default), only the chief (``ChiefOnly``), or every rank on its own
    (``WorkersAskMaster``)."""

    WorkersAskChief = "WORKERS_ASK_CHIEF"
    ChiefOnly = "CHIEF_ONLY"
    WorkersAskMaster = "WORKERS_ASK_MASTER"


class PreemptContext:
    """``should_preempt()`` turns true once the master wants the slots back.

    From the first call on, a background thread watches for the master's answer (through the
    trial's agent, which the master tells; else with a long poll on the master), so the check
    itself is a flag read: call it as often as every batch. On a preemption the code should
    checkpoint and exit; its trial resumes from that checkpoint later.

    In a distributed trial with ``PreemptMode.WorkersAskChief`` (the default), only the chief
    watches the master and ``should_preempt()`` is a collective: **every rank must call it
    together**, at the same point of its loop, and all get the chief's answer, so all ranks stop
    at the same step. It then costs a round trip between the ranks: call it every few batches
    rather than every one when batches are very short.
    """

    def __init__(
        self,
        session: MasterSession | None,
        allocation_id: str,
        distributed: DistributedContext | None = None,
        mode: PreemptMode = PreemptMode.WorkersAskChief,
    ) -> None:
        self._session = session
        self._allocation_id = allocation_id
        self._path = f"/api/v1/allocations/{allocation_id}/signals/preemption"
        relay = os.environ.get(RELAY_ENV) if session is not None else None
        self._relay = RelayClient(relay, session.token) if relay and session else None
        """The agent's relay, while it answers: the master tells the agent, which tells the
        trial, so no long poll per trial is held open on the master."""
        self._dist = distributed or DistributedContext()
        self._mode = PreemptMode(mode)
        self._flag = threading.Event()
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None
        self._watches = session is not None and (
            self._dist.rank == 0 or self._mode is PreemptMode.WorkersAskMaster
        )
        self._start_lock = threading.Lock()

    def _start_watching(self) -> None:
        """On the first question: ask the master once, then watch it from a thread.

        Code that never asks costs the master nothing (no long-poll held open per trial,
        none to answer when the trial ends); the first answer is the master's, not a flag the
        thread has not set yet."""
        with self._start_lock:
            if self._thread is not None or self._closed.is_set():
                return
            # Briefly, once: a master that is away is the watcher's to wait for, not the
            # training loop's.
            self._ask(0.0, deadline=0.0, timeout=FIRST_ASK_SECONDS, failure=logging.DEBUG)
            self._thread = threading.Thread(target=self._watch, name="assay-preempt", daemon=True)
            self._thread.start()

    def _ask(
        self,
        wait: float,
        *,
        deadline: float = RETRY_DEADLINE,
        timeout: float | None = None,
        failure: int = logging.WARNING,
    ) -> bool | None:
        """Ask the master, waiting up to ``wait`` for a yes: whether it said yes, None when the
        asking failed (logged at level ``failure``)."""
        assert self._session is not None
        if self._relay is not None:
            try:
                told = self._relay.preemption(self._allocation_id, wait)
            except (RelayGone, AssayError) as exc:
                log.debug("the agent's relay did not tell the preemption (%s)", exc)
                if not isinstance(exc, RelayGone) or exc.for_good:
                    self._relay = None
            else:
                if told is not None:
                    if told:
                        self._flag.set()
                    return told
                self._relay = None  # the agent's master tells no preemptions: ask it
        limit = wait + 30 if timeout is None else timeout
        try:
            answer = self._session.call(
                lambda h: h.get(self._path, params={"timeout_seconds": wait}, timeout=limit),
                deadline=deadline,
            )
            preempt = PreemptionAnswer.from_dict(answer).preempt
        except AssayError as exc:
            if not self._closed.is_set():
                log.log(failure, "preemption check failed: %s", exc)
            return None
        if preempt:
            self._flag.set()
        return preempt

    def _watch(self) -> None:
        while not self._closed.is_set() and not self._flag.is_set():
            if self._ask(LONG_POLL_SECONDS) is None:
                self._closed.wait(1.0)

    def should_preempt(self, auto_ack: bool = True) -> bool:
        """Whether the trial should checkpoint and exit now (a pause, a preemption or an early
        stop). ``auto_ack`` is accepted for Determined compatibility and has no effect (see
        :meth:`acknowledge_preemption_signal`)."""
        if self._watches and self._thread is None:
            self._start_watching()
        preempt = self._flag.is_set()
        if self._dist.size > 1 and self._mode is not PreemptMode.WorkersAskMaster:
            if self._mode is PreemptMode.ChiefOnly:
                if self._dist.rank != 0:
                    raise RuntimeError(
                        f"rank {self._dist.rank} called should_preempt() with preempt_mode="
                        "ChiefOnly: then only the chief (rank 0) may; use WorkersAskChief (the "
                        "default) to call it on every rank together"
                    )
            else:
                preempt = bool(self._dist.broadcast(preempt))
        return preempt

    def acknowledge_preemption_signal(self) -> None:
        """Accepted for Determined compatibility; assay's master needs no acknowledgement (it
        waits for the trial to exit, up to the pool's ``preemption_timeout``)."""

    def _simulate(self) -> None:
        """Make :meth:`should_preempt` true (for tests of user code off-cluster)."""
        self._flag.set()

    def close(self) -> None:
        self._closed.set()
