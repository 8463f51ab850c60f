"""``ctx.searcher``: the operations the experiment's searcher gives this trial.

In a distributed trial only the chief (rank 0) talks to the master. With the default
``SearcherMode.WorkersAskChief`` every rank iterates ``operations()`` together: the chief asks the
master for each operation and broadcasts it (and the end) to the other ranks, so all of them
train to the same lengths; ``op.report_completed`` and ``op.report_progress`` send only from the
chief and do nothing on the others.
"""

from __future__ import annotations

import enum
import logging
import math
from collections.abc import Callable, Iterator

from assay.core._distributed import DistributedContext
from assay.core._session import MasterSession
from assay.protocol import CompletedOperation, OperationAnswer, ProgressReport

log = logging.getLogger("assay.core")


class SearcherMode(enum.Enum):
    WorkersAskChief = "WORKERS_ASK_CHIEF"
    ChiefOnly = "CHIEF_ONLY"


class SearcherOperation:
    """Train to ``length`` units (absolute: the total since the trial began), then validate
    and call :meth:`report_completed` with the searcher metric."""

    def __init__(self, context: SearcherContext | None, length: int) -> None:
        # None off-cluster and on the ranks other than the chief: nothing is sent from there.
        self._context = context
        self._length = length
        self._completed = False

    @property
    def length(self) -> int:
        return self._length

    def report_progress(self, length: float) -> None:
        """How many units of this operation are done (shown as the trial's progress)."""
        if self._context is not None:
            self._context._progress(length / max(self._length, 1))

    def report_completed(self, searcher_metric: float) -> None:
        if self._completed:
            raise RuntimeError("report_completed() was already called for this operation")
        value = float(searcher_metric)
        if math.isnan(value) or math.isinf(value):
            raise ValueError(f"searcher_metric must be a finite number, got {searcher_metric!r}")
        if self._context is not None:
            # Marked once the master has it: a report that failed on the way (the master
            # unreachable past the retries) leaves the operation to be completed again.
            self._context._complete(self._length, value)
        self._completed = True


class SearcherContext:
    def __init__(
        self,
        session: MasterSession | None,
        trial_id: int | None,
        offcluster_length: int = 1,
        distributed: DistributedContext | None = None,
        on_complete: Callable[[], None] | None = None,
    ) -> None:
        self._session = session
        self._trial_id = trial_id
        self._on_complete = on_complete
        """Delivers the metric reports still on their way (the train context's flush): the
        validation an operation's metric came from is stored before the searcher hears of
        it, so whoever sees the searcher's progress finds the metric too."""
        self._offcluster_length = offcluster_length
        self._dist = distributed or DistributedContext()

    def operations(
        self, searcher_mode: SearcherMode = SearcherMode.WorkersAskChief, auto_ack: bool = True
    ) -> Iterator[SearcherOperation]:
        """Operations until the searcher needs no more from this trial.

        Each must be completed (``op.report_completed(metric)`` on the chief) before the next is
        asked for. Off-cluster, a single operation of ``offcluster_length`` units is yielded. In
        a distributed trial every rank must iterate together (``WorkersAskChief``), or only the
        chief iterates (``ChiefOnly``).
        """
        del auto_ack
        searcher_mode = SearcherMode(searcher_mode)
        chief = self._dist.rank == 0
        together = self._dist.size > 1 and searcher_mode is SearcherMode.WorkersAskChief
        if not chief and not together:
            raise RuntimeError(
                f"rank {self._dist.rank} iterated searcher operations with searcher_mode="
                "ChiefOnly: then only the chief (rank 0) may; use WorkersAskChief (the default) "
                "to iterate on every rank"
            )
        if not chief:
            while True:
                length = self._dist.broadcast(None)
                if length is None:
                    return
                yield SearcherOperation(None, int(length))
        for length in self._lengths():
            if together:
                self._dist.broadcast(length)
            op = SearcherOperation(self if self._session is not None else None, length)
            yield op
            if self._session is not None and not op._completed:
                raise RuntimeError(
                    "call op.report_completed(metric) before asking for the next operation"
                )
        if together:
            self._dist.broadcast(None)

    def _lengths(self) -> Iterator[int]:
        if self._session is None:
            yield self._offcluster_length
            return
        path = f"/api/v1/trials/{self._trial_id}/searcher/operation"
        session = self._session
        while True:
            raw = session.call(lambda h: h.get(path, params={"timeout": 60}, timeout=120))
            answer = OperationAnswer.from_dict(raw)
            if answer.done or answer.length is None:
                return
            yield answer.length

    def _complete(self, length: int, metric: float) -> None:
        assert self._session is not None
        if self._on_complete is not None:
            self._on_complete()
        path = f"/api/v1/trials/{self._trial_id}/searcher/completed_operation"
        body = CompletedOperation(length, metric).to_dict()
        self._session.call(lambda h: h.post(path, body))

    def _progress(self, fraction: float) -> None:
        if self._session is None:
            return
        path = f"/api/v1/trials/{self._trial_id}/progress"
        body = ProgressReport(min(1.0, max(0.0, fraction))).to_dict()
        self._session.call(lambda h: h.post(path, body))
