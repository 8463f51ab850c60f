"""The master's side of the harness: what trial processes ask for and report, over REST with
their allocation's token (and their metric reports relayed by their agent, with the same)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from assay import rest
from assay.db import Session, allocations, experiments, trials, users
from assay.errors import AssayError, Fenced, InvalidRequest, Unauthorized
from assay.master.experiments import _harness as harness
from assay.master.identity import Actor
from assay.master.kernel import Caller, Orchestrator, Tx, views
from assay.protocol import (
    AllocationState,
    CheckpointReport,
    MetricReport,
    RelayedBatch,
    RelayOutcome,
)

log = logging.getLogger(__name__)

Written = tuple[int, int, float | None] | Fenced | None
"""What a merged write of a batch of reports answers (:func:`harness.ingest_reports`)."""

IDLE_RELEASE_SECONDS = 5.0
"""How long a trial that asked for its next operation may hold its slots waiting for one."""


class HarnessService:
    def __init__(self, core: Orchestrator) -> None:
        self.core = core

    async def caller(self, token: str | None, trial_id: int | None = None) -> Caller:
        """The allocation whose ``token`` this is (and, given ``trial_id``, that it runs that
        trial); raises :class:`Unauthorized` otherwise. A token is read from the database once
        while its allocation lives (``Orchestrator.callers``)."""
        callers = self.core.callers
        found = callers.get(token) if token else None
        if found is None:
            since = callers.version()
            found = await self.core.read(lambda s: harness.authenticate(s, token))
            if token:  # always, once authenticated: an empty token is refused above
                callers.keep(token, found, since)
        harness.check_trial(found, trial_id)
        return found

    async def owner(self, token: str | None) -> Actor:
        """The user a live allocation's ``token`` acts as where Determined's API is served:
        its experiment's owner, as a Determined task's token is its owner's (assay's own API
        never takes it as a user's). :class:`Unauthorized` for any other token, an ended
        allocation's, or an owner no longer active."""
        caller = await self.caller(token)

        def read(session: Session) -> Actor:
            trial = trials.require(session, caller.trial_id)
            exp = experiments.require(session, trial.experiment_id)
            user = users.named(session, exp.owner)
            if user is None or not user.active:
                raise Unauthorized(
                    f"the owner of trial {caller.trial_id}, {exp.owner}, is not active"
                )
            # No token row of its own: signing out with it ends nothing.
            return Actor(user_id=user.id, username=user.username, admin=user.admin, token_id=0)

        return await self.core.read(read)

    async def operation(self, caller: Caller, timeout: float) -> rest.SearcherOperation:
        """The trial's next length to train to; ``done`` once the searcher needs no more.

        Waits up to ``timeout`` for the searcher; a trial left waiting past
        ``IDLE_RELEASE_SECONDS`` is released: told it is done for now, so it exits and frees
        its slots, and it is queued again if the searcher later asks for more (ASHA promotion).
        """
        key = ("op", caller.trial_id)
        deadline = self.core.clock() + min(timeout, IDLE_RELEASE_SECONDS)
        while True:
            since = self.core.waiters.version(key)
            answer = await self._answer(caller)
            if answer is not None:
                return answer
            remaining = deadline - self.core.clock()
            if remaining <= 0:
                break
            await self.core.wait(key, since, remaining)
        released = await self.core.transact(harness.release_if_idle, caller)
        if not released:
            answer = await self._answer(caller)
            if answer is not None:
                return answer
        return rest.SearcherOperation(length=None, done=True, released=True)

    async def _answer(self, caller: Caller) -> rest.SearcherOperation | None:
        def read(session: Session) -> rest.SearcherOperation | None:
            # A copy the master gave up on while it waited gets no operation: it stops.
            harness.check_live(session, caller)
            done = rest.SearcherOperation(length=None, done=True)
            trial = trials.get(session, caller.trial_id)
            exp = experiments.get(session, trial.experiment_id) if trial else None
            if trial is None or exp is None:
                return done
            searcher = self.core.searchers.searcher(exp)
            pending = searcher.pending_length(trial.request_id)
            if pending is not None:
                return rest.SearcherOperation(length=pending, done=False)
            if searcher.code_driven:
                # Its code decides how long to train; the searcher gives it no lengths.
                return done
            if searcher.is_closed(trial.request_id) or searcher.shutdown is not None:
                return done
            return None

        return await self.core.read(read, locked=True)

    async def complete_operation(self, caller: Caller, length: int, metric: float) -> None:
        await self.core.transact(harness.complete_operation, caller, length, metric)

    async def report_metrics(self, caller: Caller, reports: list[MetricReport]) -> None:
        """Store a batch of reports (a repeated one is stored once)."""
        now = self.core.clock()
        written = await self.core.record_merged(self._ingest, (caller, reports, now))
        stored = await self._stored(caller, reports, now, written)
        self._tell([(caller, reports, stored)], now)

    async def _stored(
        self,
        caller: Caller,
        reports: list[MetricReport],
        now: float,
        written: Written,
    ) -> tuple[int, int, float | None]:
        """The trial's numbers once ``reports`` are stored: ``written``, what the merged write
        (:meth:`_ingest`) answered. Stored outside the lock, never waiting behind a scheduling
        pass, together with every other trial's that came meanwhile: training reports decide
        nothing, nor do validations whose searcher learns nothing from them. Validations that
        may decide the search (a code-driven searcher's) come back None: stored and fed to the
        searcher here, in one transaction, under the lock."""
        if isinstance(written, Fenced):
            raise written
        if written is not None:
            return written

        def write_and_feed(tx: Tx) -> tuple[int, int, float | None]:
            ingested = harness.ingest_metrics(tx.session, caller, reports, now, tx.searchers.config)
            harness.feed_code_driven(tx, ingested)
            return ingested.numbers or (-1, 0, None)

        return await self.core.transact(write_and_feed)

    def _tell(
        self,
        stored: Sequence[tuple[Caller, list[MetricReport], tuple[int, int, float | None]]],
        now: float,
    ) -> None:
        """Count stored batches, and tell live viewers of them in one event batch (a repeated
        report is told again: viewers know a report by its trial, run, group and step)."""
        times = [r.time for _, reports, _ in stored for r in reports if r.time]
        rows = sum(len(reports) for _, reports, _ in stored)
        oldest = min(times, default=None)
        self.core.measures.count_ingested("metrics", rows, oldest, self.core.clock())
        told = [
            rest.TrialMetrics(
                trial_id=caller.trial_id,
                experiment_id=experiment_id,
                metrics=[views.reported(caller.trial_id, caller.run, r, now) for r in reports],
                steps_completed=steps,
                best_validation=best,
            )
            for caller, reports, (experiment_id, steps, best) in stored
            if reports
        ]
        if told:
            self.core.events.publish(rest.EventBatch(metrics=told))

    async def relayed(self, batches: Sequence[RelayedBatch]) -> list[RelayOutcome]:
        """Trials' batches of metric reports and checkpoints an agent relayed, in its order:
        each checked and stored as its ``POST /trials/{id}/metrics`` or ``POST /checkpoints``
        would be (the same token, the same checks), all at once, so that they are written
        together. The tokens not yet known are read in one query (a restarted master is sent
        every trial's backlog at once: one read per batch was most of its work). The metric
        batches of known tokens are handed to the group commit at once, without a task each
        (a task per batch was a twentieth of the master's time at 1,000 agents, B13), and told
        to viewers in one event batch."""
        callers = self.core.callers
        unknown = sorted({b.token for b in batches if b.token and callers.get(b.token) is None})
        if unknown:
            since = callers.version()
            found = await self.core.read(lambda s: harness.authenticated(s, unknown))
            for token, caller in found.items():
                callers.keep(token, caller, since)
        now = self.core.clock()
        outcomes: dict[int, RelayOutcome] = {}
        others: list[int] = []
        submitted: list[tuple[int, Caller, list[MetricReport], asyncio.Future[Written]]] = []
        for i, batch in enumerate(batches):
            known = callers.get(batch.token) if batch.token else None
            if known is None or batch.checkpoint is not None:
                others.append(i)  # refused, read again, or registered under the lock
                continue
            try:
                harness.check_trial(known, batch.trial_id)
                body = _valid(rest.MetricsBatch, {"reports": batch.reports}, "the reports")
            except AssayError as exc:
                outcomes[i] = _refused(exc)
                continue
            reports = [r.to_protocol() for r in body.reports]
            written = self.core.submit_merged(self._ingest, (known, reports, now))
            submitted.append((i, known, reports, written))
        # Each awaited in turn: they are all on their way already.
        alone = asyncio.gather(*(self._relayed(batches[i]) for i in others))
        stored: list[tuple[Caller, list[MetricReport], tuple[int, int, float | None]]] = []
        for i, caller, reports, written in submitted:
            try:
                numbers = await self._stored(caller, reports, now, await written)
            except Exception as exc:
                outcomes[i] = _failed(exc, batches[i].trial_id)
                continue
            stored.append((caller, reports, numbers))
            outcomes[i] = RelayOutcome(204)
        self._tell(stored, now)
        outcomes.update(zip(others, await alone, strict=True))
        return [outcomes[i] for i in range(len(batches))]

    async def _relayed(self, batch: RelayedBatch) -> RelayOutcome:
        try:
            caller = await self.caller(batch.token, batch.trial_id)
            if batch.checkpoint is not None:
                checkpoint = _valid(rest.CheckpointReport, batch.checkpoint, "the checkpoint")
                await self.report_checkpoint(caller, checkpoint.to_protocol())
                return RelayOutcome(204)
            body = _valid(rest.MetricsBatch, {"reports": batch.reports}, "the reports")
            await self.report_metrics(caller, [r.to_protocol() for r in body.reports])
        except Exception as exc:
            return _failed(exc, batch.trial_id)
        return RelayOutcome(204)

    def _ingest(
        self, session: Session, items: list[tuple[Caller, list[MetricReport], float]]
    ) -> list[Written]:
        return harness.ingest_reports(session, items, self.core.searchers.loaded_passive)

    async def report_checkpoint(self, caller: Caller, report: CheckpointReport) -> rest.Checkpoint:
        """Register a checkpoint (a repeat changes nothing); the checkpoint as stored. Those
        registered meanwhile by other trials go in the same transaction under the lock."""
        return await self.core.transact_merged(_register_checkpoints, (caller, report))

    async def report_early_exit(self, caller: Caller, reason: str) -> None:
        await self.core.transact(harness.report_early_exit, caller, reason)

    async def report_progress(self, caller: Caller, progress: float) -> None:
        await self.core.transact(harness.report_progress, caller, progress)

    async def preemption(self, allocation_id: str, timeout: float) -> rest.PreemptionSignal:
        """Whether the allocation should checkpoint and exit, waiting up to ``timeout`` for
        the answer to become yes."""
        key = ("preempt", allocation_id)

        def read(session: Session) -> bool:
            alloc = allocations.brief(session, allocation_id)
            if alloc is None or alloc.state == AllocationState.TERMINATED:
                # Not "checkpoint and exit": a copy the master gave up on must write nothing
                # more, not a checkpoint either; it is told it is fenced off, and stops.
                raise harness.fenced(allocation_id)
            return alloc.preempt is not None

        since = self.core.waiters.version(key)
        preempt = await self.core.read(read)
        # Every change of the answer (a preemption asked for, the allocation ended) wakes the
        # key after its commit: a wait that ran out unwoken has the answer it had. A large
        # cluster's trials each ask again every minute; half the reads are saved.
        if not preempt and timeout > 0 and await self.core.wait(key, since, timeout):
            preempt = await self.core.read(read)
        return rest.PreemptionSignal(preempt=preempt)


M = TypeVar("M", bound=BaseModel)


def _valid(model: type[M], raw: object, what: str) -> M:
    """``raw`` as ``model``, or :class:`InvalidRequest` saying what in it is wrong."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        said = "; ".join(".".join(str(p) for p in e["loc"]) + ": " + e["msg"] for e in exc.errors())
        raise InvalidRequest(f"{what} is not valid: {said}") from None


def _refused(exc: AssayError) -> RelayOutcome:
    return RelayOutcome(exc.status, exc.to_json()["error"])


def _failed(exc: Exception, trial_id: int) -> RelayOutcome:
    """A relayed batch's outcome for what its storing raised: one batch's failure is told to
    its trial, not the agent's."""
    if isinstance(exc, AssayError):
        return _refused(exc)
    log.error("relayed reports of trial %s failed", trial_id, exc_info=exc)
    failed = AssayError(f"internal error: {type(exc).__name__}: {exc}")
    return _refused(failed)


def _register_checkpoints(
    tx: Tx, items: list[tuple[Caller, CheckpointReport]]
) -> list[rest.Checkpoint | AssayError]:
    return [
        r if isinstance(r, AssayError) else views.checkpoint(r)
        for r in harness.report_checkpoints(tx, items)
    ]
