"""Experiment and trial lifecycle: the transitions, as synchronous handlers on a :class:`Tx`.

The rules live in :mod:`assay.master.experiments._transitions` as pure functions; each handler here
gathers their facts from the rows, asks them, and applies the decision: it changes rows and records
actions. It never performs IO beyond the transaction, so the master can run it on a worker thread
under its lock and act only after the commit."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from assay.db import (
    Allocation,
    Experiment,
    Trial,
    allocations,
    checkpoints,
    experiments,
    jobs,
    trials,
)
from assay.errors import InvalidTransition
from assay.master.artifacts import mark_for_collection
from assay.master.experiments._end_message import failure_message
from assay.master.experiments._transitions import (
    TIMED_OUT,
    ClosedEvent,
    ExitedEarlyEvent,
    ExitFacts,
    ExperimentEvent,
    TrialFacts,
    TrialOrder,
    check_archivable,
    decide_exit,
    experiment_finished,
    experiment_transition,
    has_work,
    stopped_early,
    stronger_preemption,
    trial_on_event,
)
from assay.master.kernel import (
    AllocationEnded,
    ExperimentEnded,
    KillAllocation,
    PreemptAllocation,
    Reschedule,
    Tx,
    Wake,
    account_state_change,
)
from assay.protocol import (
    AllocationState,
    ExitedReason,
    ExperimentState,
    PreemptReason,
    TrialState,
)
from assay.searcher import (
    Close,
    Create,
    Operation,
    Searcher,
    Shutdown,
    ValidateAfter,
    checkpoint_parent,
    search_length,
)

log = logging.getLogger(__name__)


# -- searcher operations ----------------------------------------------------------------------


def apply_ops(tx: Tx, exp: Experiment, ops: list[Operation]) -> None:
    """Carry out what the searcher decided, then log what it handled in the same transaction."""
    searcher = tx.searchers.searcher(exp)
    tx.touched.add(exp.id)
    ended = ExperimentState(exp.state).stopping or ExperimentState(exp.state).terminal
    for op in ops:
        if isinstance(op, Create):
            # A search stopped from outside (its max_duration ran out) starts nothing new
            # while its last trials finish.
            if not ended:
                _create_trial(tx, exp, op)
        elif isinstance(op, ValidateAfter):
            _validate_after(tx, exp, searcher, op)
        elif isinstance(op, Close):
            _close_trial(tx, exp, searcher, op)
        elif isinstance(op, Shutdown):
            _shutdown(tx, exp, op)
    _store_progress(tx, exp, searcher)
    maybe_finish_experiment(tx, exp)
    tx.searchers.save(tx.session, exp, final=ExperimentState(exp.state).terminal)


def update_progress(tx: Tx, exp: Experiment) -> None:
    """Store the experiment's progress: its searcher's, counting what the trials training now
    reported of their operations. The one definition of ``progress`` every view shows (the
    experiment, its list, the searcher-progress answer, the CLI)."""
    update_progress_of(tx, [exp])


def update_progress_of(tx: Tx, exps: Sequence[Experiment]) -> None:
    """:func:`update_progress` of each of ``exps``, their training trials read in one query
    (checkpoints registered together touch an experiment each)."""
    # An ended experiment's last progress stands (1.0 when it completed); its searcher is gone.
    live = [e for e in exps if not ExperimentState(e.state).terminal]
    searchers = {e.id: tx.searchers.searcher(e) for e in live}
    reported = trials.training_reports_of(
        tx.session, {e.id: searchers[e.id].training() for e in live}
    )
    for exp in live:
        _store_progress(tx, exp, searchers[exp.id], reported.get(exp.id, []))


def _store_progress(
    tx: Tx,
    exp: Experiment,
    searcher: Searcher,
    reported: Sequence[tuple[str, float, int]] | None = None,
) -> None:
    """Store the searcher's progress; ``reported``: its training trials' reports, when read
    already (:func:`trials.training_reports`)."""
    unit = tx.searchers.config(exp).searcher.plan().unit
    if reported is None:
        reported = trials.training_reports(tx.session, exp.id, searcher.training())
    experiments.set_progress(
        tx.session, exp, searcher.progress(training_shares(searcher, reported, unit))
    )


def training_shares(
    searcher: Searcher, reported: Sequence[tuple[str, float, int]], unit: str
) -> dict[str, float]:
    """Each training trial's share of its current operation: the fraction its code reported
    (``op.report_progress``: units done over the operation's length, or, code-driven, the
    trial's own fraction), or, counted in batches, the batches it trained over the operation's
    length (for code that reports metrics but not progress), whichever is further.
    ``reported``: the training trials' ``(request_id, progress, steps_completed)``."""
    shares: dict[str, float] = {}
    for request_id, progress, steps in reported:
        share = progress
        pending = searcher.pending_length(request_id)
        if unit == "batches" and pending:
            share = max(share, steps / pending)
        shares[request_id] = share
    return shares


def _create_trial(tx: Tx, exp: Experiment, op: Create) -> None:
    source = op.checkpoint
    parent_request = checkpoint_parent(source)
    if parent_request is not None:
        # PBT's exploit: the new trial starts from its parent's latest checkpoint.
        parent = trials.by_request(tx.session, exp.id, parent_request)
        source = parent.latest_checkpoint if parent is not None else None
    state = TrialState.QUEUED if exp.state == ExperimentState.ACTIVE else TrialState.PAUSED
    trials.create(
        tx.session,
        experiment_id=exp.id,
        request_id=op.request_id,
        hparams=op.hparams,
        seed=op.seed,
        state=state,
        source_checkpoint=source,
        created_at=tx.now,
    )
    tx.act(Reschedule())


def _validate_after(tx: Tx, exp: Experiment, searcher: Searcher, op: ValidateAfter) -> None:
    trial = trials.by_request(tx.session, exp.id, op.request_id)
    if trial is None:
        return
    # The trial's reported progress is a fraction of its operation: of this new one it has done
    # what it validated at so far (a share of the last one would count work not done).
    done = searcher.trials[op.request_id].completed_length
    trials.set_progress(tx.session, trial, min(done / max(op.length, 1), 1.0))
    tx.act(Wake(("op", trial.id)))
    if (
        trial.state == TrialState.WAITING
        and exp.state == ExperimentState.ACTIVE
        and allocations.live_of_trial(tx.session, trial.id) is None
    ):
        # A trial waiting between rungs was promoted: it resumes from its checkpoint.
        trials.set_state(tx.session, trial, state=TrialState.QUEUED)
        tx.act(Reschedule())


def _close_trial(tx: Tx, exp: Experiment, searcher: Searcher, op: Close) -> None:
    trial = trials.by_request(tx.session, exp.id, op.request_id)
    if trial is None or TrialState(trial.state).terminal:
        return
    tx.act(Wake(("op", trial.id)))
    alloc = allocations.live_of_trial(tx.session, trial.id)
    if alloc is not None:
        # Still running. Searcher-driven code finds its operations over when it asks for the
        # next; code-driven code is told through should_preempt(). Either way it exits
        # cleanly and the exit completes the trial.
        if searcher.code_driven:
            request_preemption(tx, alloc, PreemptReason.EARLY_STOP)
        return
    early = stopped_early(trial.runs, _planned_reached(tx, exp, searcher, trial), False)
    _finish_trial(tx, trial, TrialState.COMPLETED, early_stopped=early)
    apply_ops(tx, exp, searcher.trial_closed(trial.request_id))


def _shutdown(tx: Tx, exp: Experiment, op: Shutdown) -> None:
    event = ExperimentEvent.SEARCHER_FAILED if op.failure else ExperimentEvent.SEARCHER_DONE
    if not move_experiment(tx, exp, event):
        return
    if op.failure:
        experiments.update(tx.session, exp, message=failure_message(tx.session, exp.id, op.message))
    move_trials(tx, exp, event)


# -- experiment transitions ---------------------------------------------------------------------


def maybe_finish_experiment(tx: Tx, exp: Experiment) -> None:
    state = ExperimentState(exp.state)
    if not state.stopping:
        return
    final = experiment_finished(state, live_trials=bool(trials.live_of(tx.session, exp.id)))
    if final is None:
        return
    experiments.end(tx.session, exp, state=final, at=tx.now)
    job = jobs.get(tx.session, exp.job_id)
    if job is not None:
        jobs.mark_done(tx.session, job)
    mark_for_collection(tx, exp)
    tx.act(ExperimentEnded(exp.id))
    tx.act(Reschedule())


def move_experiment(tx: Tx, exp: Experiment, event: ExperimentEvent) -> bool:
    """Apply ``event`` to the experiment's state; False if it changes nothing."""
    new = experiment_transition(exp.id, ExperimentState(exp.state), event)
    if new is None:
        return False
    account_state_change(tx.session, exp, new, tx.now)
    experiments.set_state(tx.session, exp, state=new)
    return True


def move_trials(tx: Tx, exp: Experiment, event: ExperimentEvent) -> None:
    """Apply ``event`` to each live trial of the experiment."""
    searcher = tx.searchers.searcher(exp) if event is ExperimentEvent.ACTIVATE else None
    for trial in trials.live_of(tx.session, exp.id):
        alloc = allocations.live_of_trial(tx.session, trial.id)
        facts = TrialFacts(TrialState(trial.state), has_allocation=alloc is not None)
        if searcher is not None:
            rid = trial.request_id
            closed = searcher.is_closed(rid)
            facts = replace(
                facts,
                runs=trial.runs,
                closed=closed,
                has_work=has_work(
                    closed=closed,
                    code_driven=searcher.code_driven,
                    runs=trial.runs,
                    pending=searcher.pending_length(rid) is not None,
                ),
            )
        order = trial_on_event(event, facts)
        _carry_out(tx, trial, alloc, order)
        if order.searcher_closed:
            assert searcher is not None
            apply_ops(tx, exp, searcher.trial_closed(trial.request_id))


def _carry_out(tx: Tx, trial: Trial, alloc: Allocation | None, order: TrialOrder) -> None:
    if alloc is not None and order.preempt is not None:
        request_preemption(tx, alloc, order.preempt)
    if alloc is not None and order.kill:
        kill_allocation(tx, alloc)
    if order.state is not None and order.ended:
        _finish_trial(tx, trial, order.state)
    elif order.state is not None:
        trials.set_state(tx.session, trial, state=order.state)


def pause_experiment(tx: Tx, experiment_id: int) -> Experiment:
    exp = experiments.require(tx.session, experiment_id)
    if move_experiment(tx, exp, ExperimentEvent.PAUSE):
        move_trials(tx, exp, ExperimentEvent.PAUSE)
        tx.act(Reschedule())
    return exp


def activate_experiment(tx: Tx, experiment_id: int) -> Experiment:
    exp = experiments.require(tx.session, experiment_id)
    if move_experiment(tx, exp, ExperimentEvent.ACTIVATE):
        searcher = tx.searchers.searcher(exp)
        if not searcher.started:
            apply_ops(tx, exp, searcher.initial_operations())
        move_trials(tx, exp, ExperimentEvent.ACTIVATE)
        tx.act(Reschedule())
    return exp


def cancel_experiment(tx: Tx, experiment_id: int) -> Experiment:
    exp = experiments.require(tx.session, experiment_id)
    if move_experiment(tx, exp, ExperimentEvent.CANCEL):
        move_trials(tx, exp, ExperimentEvent.CANCEL)
        maybe_finish_experiment(tx, exp)
    return exp


def kill_experiment(tx: Tx, experiment_id: int) -> Experiment:
    exp = experiments.require(tx.session, experiment_id)
    if move_experiment(tx, exp, ExperimentEvent.KILL):
        move_trials(tx, exp, ExperimentEvent.KILL)
    maybe_finish_experiment(tx, exp)
    return exp


def set_archived(tx: Tx, experiment_id: int, archived: bool) -> Experiment:
    exp = experiments.require(tx.session, experiment_id)
    check_archivable(exp.id, ExperimentState(exp.state), archived)
    experiments.set_archived(tx.session, exp, archived=archived)
    return exp


def kill_trial(tx: Tx, trial_id: int) -> Trial:
    trial = trials.require(tx.session, trial_id)
    if TrialState(trial.state).terminal:
        raise InvalidTransition(f"trial {trial.id} has already ended ({trial.state})")
    alloc = allocations.live_of_trial(tx.session, trial.id)
    facts = TrialFacts(TrialState(trial.state), has_allocation=alloc is not None)
    _carry_out(tx, trial, alloc, trial_on_event(ExperimentEvent.KILL, facts))
    if alloc is None:
        exp = experiments.require(tx.session, trial.experiment_id)
        searcher = tx.searchers.searcher(exp)
        apply_ops(
            tx, exp, searcher.trial_exited_early(trial.request_id, ExitedReason.USER_CANCELED)
        )
    return trial


# -- allocations ---------------------------------------------------------------------------------


def request_preemption(tx: Tx, alloc: Allocation, reason: PreemptReason) -> None:
    """Ask an allocation to checkpoint and exit. A stronger reason replaces a weaker one."""
    current = PreemptReason(alloc.preempt) if alloc.preempt else None
    if not stronger_preemption(current, reason):
        return
    allocations.request_preemption(tx.session, alloc, reason=reason, at=tx.now)
    tx.act(Wake(("preempt", alloc.id)))
    exits = alloc.exits or {}
    for agent_id in alloc.slots or {}:
        if agent_id not in exits:
            tx.act(PreemptAllocation(agent_id, alloc.id))
    tx.act(Wake(("op", alloc.trial_id)))


def enforce_preemption_timeouts(tx: Tx, timeouts: dict[str, float]) -> list[str]:
    """Kill allocations asked to stop longer ago than their ``preemption_timeout`` (the
    experiment's, else their pool's, from ``timeouts``). Returns the ones killed."""
    killed = []
    for alloc, _trial, exp in allocations.preempting(tx.session):
        own = tx.searchers.config(exp).preemption_timeout
        limit = float(own) if own is not None else timeouts.get(alloc.pool, 3600.0)
        if alloc.preempt_at is not None and tx.now - alloc.preempt_at >= limit:
            allocations.mark_overdue(tx.session, alloc)
            for agent_id in alloc.slots or {}:
                tx.act(KillAllocation(agent_id, alloc.id))
            killed.append(alloc.id)
    return killed


OVERDUE = "did not stop within its preemption timeout; killed"


def needs_kill(alloc: Allocation | allocations.LiveBrief) -> bool:
    """Whether a live allocation's processes must be killed (a kill not yet obeyed)."""
    failed = any(code is None or code != 0 for code in (alloc.exits or {}).values())
    return alloc.kill_requested or alloc.overdue or failed


def kill_allocation(tx: Tx, alloc: Allocation) -> None:
    allocations.request_kill(tx.session, alloc)
    for agent_id in alloc.slots or {}:
        tx.act(KillAllocation(agent_id, alloc.id))


def allocations_started(tx: Tx, starts: Sequence[tuple[str, str]]) -> None:
    """Agents say allocations run (``(allocation_id, agent_id)`` each, in the order they said
    it): each one assigned to that agent is marked running, and its trial and experiment
    started if they had not. The rows are read at once, a query each: one start at a time was
    the largest of the master's locked work at 1,000 agents (B13)."""
    session = tx.session
    held = allocations.by_ids(session, [a for a, _ in starts])
    runs = trials.by_ids(session, [a.trial_id for a in held.values()])
    unstarted = [t.experiment_id for t in runs.values() if t.started_at is None]
    exps = experiments.by_ids(session, unstarted)
    for allocation_id, agent_id in starts:
        alloc = held.get(allocation_id)
        # An allocation's first agent to say it runs marks it running (a gang's others find
        # it so); an agent it is not on is not heard.
        if alloc is None or alloc.state != AllocationState.ASSIGNED:
            continue
        if agent_id not in (alloc.slots or {}):
            continue
        allocations.mark_started(session, alloc, at=tx.now)
        trial = runs.get(alloc.trial_id)
        if trial is None or trial.started_at is not None:
            continue
        trials.mark_started(session, trial, at=tx.now)
        exp = exps.get(trial.experiment_id)
        if exp is not None and exp.started_at is None:
            experiments.mark_started(session, exp, at=tx.now)


def allocation_exited(tx: Tx, allocation_id: str, exit_code: int | None, reason: str) -> None:
    """An allocation's process ended (or was lost): record it, and move its trial where
    :func:`decide_exit` says."""
    alloc = allocations.get(tx.session, allocation_id)
    if alloc is None or alloc.state == AllocationState.TERMINATED:
        return
    trial = trials.require(tx.session, alloc.trial_id)
    exp = experiments.require(tx.session, trial.experiment_id)
    searcher = tx.searchers.searcher(exp)
    tx.touched.add(exp.id)
    rid = trial.request_id
    facts = ExitFacts(
        trial_state=TrialState(trial.state),
        experiment_state=ExperimentState(exp.state),
        exit_code=exit_code,
        reason=reason,
        started=alloc.state != AllocationState.ASSIGNED,
        preempt=PreemptReason(alloc.preempt) if alloc.preempt else None,
        kill_requested=alloc.kill_requested,
        overdue=alloc.overdue,
        released=alloc.released,
        invalid_hp=trial.early_exit == ExitedReason.INVALID_HP,
        closed=searcher.is_closed(rid),
        code_driven=searcher.code_driven,
        pending=searcher.pending_length(rid) is not None,
        restarts=trial.restarts,
        max_restarts=tx.searchers.config(exp).max_restarts,
        runs=trial.runs,
        planned_reached=_planned_reached(tx, exp, searcher, trial),
        latest_checkpoint=trial.latest_checkpoint,
        timed_out=alloc.timed_out,
        agent_lost=alloc.lost,
        infra_restarts=trial.infra_restarts,
        lost_in_row=trial.lost_in_row,
        checkpointed=checkpoints.saved_by(tx.session, trial.id, alloc.id),
    )
    allocations.end(
        tx.session,
        alloc,
        exit_code=exit_code,
        reason=OVERDUE if alloc.overdue else TIMED_OUT if alloc.timed_out else reason,
        at=tx.now,
    )
    tx.act(AllocationEnded(alloc.id))
    tx.act(Reschedule())
    tx.act(Wake(("op", alloc.trial_id)))
    # A copy of it that still runs (its agent frozen or cut off) and waits on either long-poll
    # is answered at once: it is fenced off and stops (the harness's side of the fence).
    tx.act(Wake(("preempt", alloc.id)))
    tx.act(Wake(("logs", alloc.trial_id)))

    decision = decide_exit(facts)
    trials.record_exit(
        tx.session,
        trial,
        restarts=decision.restarts,
        infra_restarts=decision.infra_restarts,
        lost_in_row=decision.lost_in_row,
        resume_from=decision.resume_from,
    )
    if decision.ended:
        _finish_trial(
            tx,
            trial,
            decision.state,
            early_stopped=decision.early_stopped,
            message=decision.message or "",
        )
    else:
        trials.set_state(tx.session, trial, state=decision.state, message=decision.message)
    ops: list[Operation] = []
    if isinstance(decision.searcher, ClosedEvent):
        ops = searcher.trial_closed(rid)
    elif isinstance(decision.searcher, ExitedEarlyEvent):
        ops = searcher.trial_exited_early(rid, decision.searcher.reason)
    apply_ops(tx, exp, ops)


def _planned_reached(tx: Tx, exp: Experiment, searcher: Searcher, trial: Trial) -> bool | None:
    """Whether the trial trained to the length its search plans trials for (None: the search
    plans no length, or does not know the trial)."""
    planned, _ = search_length(tx.searchers.config(exp).searcher)
    record = searcher.trials.get(trial.request_id)
    if planned is None or record is None:
        return None
    return record.completed_length >= planned


def _finish_trial(
    tx: Tx,
    trial: Trial,
    state: TrialState,
    *,
    early_stopped: bool = False,
    message: str = "",
) -> None:
    trials.end(
        tx.session, trial, state=state, at=tx.now, early_stopped=early_stopped, message=message
    )
    tx.act(Wake(("op", trial.id)))
    tx.act(Wake(("logs", trial.id)))
