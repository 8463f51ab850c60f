"""Several search methods run side by side as one: the brackets of ``adaptive_asha`` and
``hyperband``.

Each event goes to the method that created the trial. The tournament shuts down when every
method has, and it fails if any failed.

With ``max_concurrent > 0`` it also enforces the cap across methods: an operation that would
start work (a ``Create``, or a ``ValidateAfter`` for an idle trial) waits in a queue while the
cap is reached and is released, in order, when a slot frees. The methods inside must therefore
not assume their operations take effect at once, and must issue a trial's first
``ValidateAfter`` from ``trial_created`` (the usual pattern), never next to its ``Create``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from assay.protocol import ExitedReason
from assay.searcher._base import SearchMethod, stage_of
from assay.searcher._ops import Close, Create, Operation, Shutdown, ValidateAfter
from assay.searcher._source import ParamSource


def _op_to_json(index: int, op: Create | ValidateAfter) -> list[Any]:
    if isinstance(op, Create):
        return [index, "create", op.request_id, op.hparams, op.seed, op.checkpoint]
    return [index, "validate", op.request_id, op.length]


def _op_from_json(raw: list[Any]) -> tuple[int, Create | ValidateAfter]:
    if raw[1] == "create":
        return int(raw[0]), Create(str(raw[2]), dict(raw[3]), int(raw[4]), raw[5])
    return int(raw[0]), ValidateAfter(str(raw[2]), int(raw[3]))


class Tournament:
    """Run ``methods`` together; see the module docstring."""

    def __init__(
        self,
        methods: list[SearchMethod],
        *,
        max_concurrent: int = 0,
        code_driven: bool = False,
        shared_source: ParamSource | None = None,
    ) -> None:
        if not methods:
            raise ValueError("a tournament needs at least one method")
        self.methods = methods
        self.max_concurrent = max_concurrent
        self.code_driven = code_driven
        self.shared_source = shared_source
        self.owner: dict[str, int] = {}
        self.finished: dict[int, Shutdown] = {}
        self.busy: list[str] = []
        self.waiting: list[tuple[int, Create | ValidateAfter]] = []
        self.shut = False

    # -- routing --------------------------------------------------------------------------------

    def _route(self, index: int, ops: list[Operation]) -> list[Operation]:
        out: list[Operation] = []
        for op in ops:
            if isinstance(op, Create):
                self.owner[op.request_id] = index
                out += self._start(index, op)
            elif isinstance(op, ValidateAfter):
                if op.request_id in self.busy:
                    out.append(op)
                else:
                    out += self._start(index, op)
            elif isinstance(op, Close):
                self._idle(op.request_id)
                out.append(op)
            else:
                self.finished[index] = op
        out += self._release()
        if not self.shut and len(self.finished) == len(self.methods):
            self.shut = True
            failures = [s.message for s in self.finished.values() if s.failure]
            # Brackets that failed alike say so once: dict.fromkeys keeps the first of each.
            message = "; ".join(dict.fromkeys(m for m in failures if m))
            out.append(Shutdown(failure=bool(failures), message=message))
        return out

    def _start(self, index: int, op: Create | ValidateAfter) -> list[Operation]:
        if self.max_concurrent > 0 and (self.waiting or len(self.busy) >= self.max_concurrent):
            self.waiting.append((index, op))
            return []
        self.busy.append(op.request_id)
        return [op]

    def _release(self) -> list[Operation]:
        out: list[Operation] = []
        while self.waiting and (self.max_concurrent <= 0 or len(self.busy) < self.max_concurrent):
            _, op = self.waiting.pop(0)
            self.busy.append(op.request_id)
            out.append(op)
        return out

    def _idle(self, request_id: str) -> None:
        if request_id in self.busy:
            self.busy.remove(request_id)
        # Work held back for a trial that is now closed or gone will never be wanted.
        self.waiting = [
            (i, op)
            for i, op in self.waiting
            if isinstance(op, Create) or op.request_id != request_id
        ]

    # -- events ---------------------------------------------------------------------------------

    def initial_operations(self) -> list[Operation]:
        out: list[Operation] = []
        for index, method in enumerate(self.methods):
            out += self._route(index, method.initial_operations())
        return out

    def trial_created(self, request_id: str) -> list[Operation]:
        index = self.owner[request_id]
        return self._route(index, self.methods[index].trial_created(request_id))

    def validation_completed(self, request_id: str, metric: float, length: int) -> list[Operation]:
        index = self.owner.get(request_id)
        if index is None:
            return []
        if not self.code_driven and request_id in self.busy:
            self.busy.remove(request_id)
        ops = self.methods[index].validation_completed(request_id, metric, length)
        return self._route(index, ops)

    def trial_exited_early(self, request_id: str, reason: ExitedReason) -> list[Operation]:
        index = self.owner.get(request_id)
        if index is None:
            return []
        self._idle(request_id)
        return self._route(index, self.methods[index].trial_exited_early(request_id, reason))

    def trial_closed(self, request_id: str) -> list[Operation]:
        index = self.owner.get(request_id)
        if index is None:
            return []
        self._idle(request_id)
        return self._route(index, self.methods[index].trial_closed(request_id))

    def stage_of(self, request_id: str) -> str | None:
        index = self.owner.get(request_id)
        return None if index is None else stage_of(self.methods[index], request_id)

    def progress(self, partial: Mapping[str, float]) -> float:
        # Each method reads the shares of its own trials.
        return sum(m.progress(partial) for m in self.methods) / len(self.methods)

    # -- persistence ----------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        return {
            "methods": [m.snapshot() for m in self.methods],
            "owner": dict(self.owner),
            "finished": {str(i): [s.failure, s.message] for i, s in sorted(self.finished.items())},
            "busy": list(self.busy),
            "waiting": [_op_to_json(i, op) for i, op in self.waiting],
            "shut": self.shut,
            "source": None if self.shared_source is None else self.shared_source.snapshot(),
        }

    def restore(self, state: dict[str, Any]) -> None:
        for method, raw in zip(self.methods, state["methods"], strict=True):
            method.restore(raw)
        self.owner = {k: int(v) for k, v in state["owner"].items()}
        self.finished = {
            int(i): Shutdown(failure=bool(f), message=str(m))
            for i, (f, m) in state["finished"].items()
        }
        self.busy = list(state["busy"])
        self.waiting = [_op_from_json(raw) for raw in state["waiting"]]
        self.shut = bool(state["shut"])
        if self.shared_source is not None:
            self.shared_source.restore(state["source"])
