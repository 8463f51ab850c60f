"""Experiment and trial lifecycle: the transitions, as synchronous handlers on a :class:`Tx`.

Each handler changes rows and records actions; it never performs IO beyond the transaction, so
the master can run it on a worker thread under its lock and act only after the commit.
"""

from __future__ import annotations

import logging

from assay.db import Allocation, Experiment, Job, Trial
from assay.db import _queries as q
from assay.errors import InvalidTransition, NotFound
from assay.master._gc import mark_for_collection
from assay.master._tx import ExperimentEnded, KillAllocation, Reschedule, Tx, Wake
from assay.protocol import AllocationState, ExperimentState, PreemptReason, TrialState
from assay.searcher import (
    Close,
    Create,
    ExitedReason,
    Operation,
    Searcher,
    Shutdown,
    ValidateAfter,
    checkpoint_parent,
    search_length,
)

log = logging.getLogger(__name__)

STOPPING_TO_TERMINAL = {
    ExperimentState.STOPPING_COMPLETED: ExperimentState.COMPLETED,
    ExperimentState.STOPPING_CANCELED: ExperimentState.CANCELED,
    ExperimentState.STOPPING_KILLED: ExperimentState.CANCELED,
    ExperimentState.STOPPING_ERROR: ExperimentState.ERROR,
}


def get_experiment(tx: Tx, experiment_id: int) -> Experiment:
    exp = tx.session.get(Experiment, experiment_id)
    if exp is None:
        raise NotFound(f"experiment {experiment_id} not found")
    return exp


def get_trial(tx: Tx, trial_id: int) -> Trial:
    trial = tx.session.get(Trial, trial_id)
    if trial is None:
        raise NotFound(f"trial {trial_id} not found")
    return trial


# -- searcher operations ----------------------------------------------------------------------


def apply_ops(tx: Tx, exp: Experiment, ops: list[Operation]) -> None:
    """Carry out what the searcher decided, then snapshot it in the same transaction."""
    searcher = tx.searchers.searcher(exp)
    tx.touched.add(exp.id)
    for op in ops:
        if isinstance(op, Create):
            _create_trial(tx, exp, op)
        elif isinstance(op, ValidateAfter):
            _validate_after(tx, exp, searcher, op)
        elif isinstance(op, Close):
            _close_trial(tx, exp, searcher, op)
        elif isinstance(op, Shutdown):
            _shutdown(tx, exp, op)
    exp.searcher_state = searcher.snapshot()
    exp.progress = searcher.progress()
    maybe_finish_experiment(tx, exp)


def _create_trial(tx: Tx, exp: Experiment, op: Create) -> None:
    source = op.checkpoint
    parent_request = checkpoint_parent(source)
    if parent_request is not None:
        # PBT's exploit: the new trial starts from its parent's latest checkpoint.
        parent = q.trial_by_request(tx.session, exp.id, parent_request)
        source = parent.latest_checkpoint if parent is not None else None
    state = TrialState.QUEUED if exp.state == ExperimentState.ACTIVE else TrialState.PAUSED
    trial = Trial(
        experiment_id=exp.id,
        request_id=op.request_id,
        hparams=op.hparams,
        seed=op.seed,
        state=state.value,
        restarts=0,
        runs=0,
        steps_completed=0,
        source_checkpoint=source,
        latest_checkpoint=source,
        progress=0.0,
        early_stopped=False,
        message="",
        created_at=tx.now,
    )
    tx.session.add(trial)
    tx.session.flush()
    tx.act(Reschedule())


def _validate_after(tx: Tx, exp: Experiment, searcher: Searcher, op: ValidateAfter) -> None:
    trial = q.trial_by_request(tx.session, exp.id, op.request_id)
    if trial is None:
        return
    tx.act(Wake(("op", trial.id)))
    if (
        trial.state == TrialState.PAUSED
        and exp.state == ExperimentState.ACTIVE
        and q.live_allocation(tx.session, trial.id) is None
    ):
        # A trial waiting between rungs was promoted: it resumes from its checkpoint.
        trial.state = TrialState.QUEUED.value
        tx.act(Reschedule())


def _close_trial(tx: Tx, exp: Experiment, searcher: Searcher, op: Close) -> None:
    trial = q.trial_by_request(tx.session, exp.id, op.request_id)
    if trial is None or TrialState(trial.state).terminal:
        return
    tx.act(Wake(("op", trial.id)))
    alloc = q.live_allocation(tx.session, trial.id)
    if alloc is not None:
        # Still running. Searcher-driven code finds its operations over when it asks for the
        # next; code-driven code is told through should_preempt(). Either way it exits
        # cleanly and the exit completes the trial.
        if searcher.code_driven:
            request_preemption(tx, alloc, PreemptReason.EARLY_STOP)
        return
    _finish_trial(
        tx, trial, TrialState.COMPLETED, early_stopped=_stopped_early(tx, exp, searcher, trial)
    )
    apply_ops(tx, exp, searcher.trial_closed(trial.request_id))


def _shutdown(tx: Tx, exp: Experiment, op: Shutdown) -> None:
    if ExperimentState(exp.state).terminal or ExperimentState(exp.state).stopping:
        return
    if op.failure:
        exp.state = ExperimentState.STOPPING_ERROR.value
        exp.message = op.message or "the searcher could not go on"
    else:
        exp.state = ExperimentState.STOPPING_COMPLETED.value
    reason = PreemptReason.CANCEL if op.failure else PreemptReason.SHUTDOWN
    for trial in q.live_trials(tx.session, exp.id):
        alloc = q.live_allocation(tx.session, trial.id)
        if alloc is not None:
            request_preemption(tx, alloc, reason)
        else:
            _finish_trial(tx, trial, TrialState.CANCELED)


# -- experiment transitions ---------------------------------------------------------------------


def maybe_finish_experiment(tx: Tx, exp: Experiment) -> None:
    state = ExperimentState(exp.state)
    if not state.stopping:
        return
    if q.live_trials(tx.session, exp.id):
        return
    exp.state = STOPPING_TO_TERMINAL[state].value
    exp.ended_at = tx.now
    if exp.state == ExperimentState.COMPLETED:
        exp.progress = 1.0
    job = tx.session.get(Job, exp.job_id)
    if job is not None:
        job.done = True
    mark_for_collection(tx, exp)
    tx.act(ExperimentEnded(exp.id))
    tx.act(Reschedule())


def pause_experiment(tx: Tx, experiment_id: int) -> Experiment:
    exp = get_experiment(tx, experiment_id)
    state = ExperimentState(exp.state)
    if state == ExperimentState.PAUSED:
        return exp
    if state != ExperimentState.ACTIVE:
        raise InvalidTransition(
            f"experiment {exp.id} is {state.value}; only an ACTIVE experiment can be paused"
        )
    exp.state = ExperimentState.PAUSED.value
    for trial in q.live_trials(tx.session, exp.id):
        alloc = q.live_allocation(tx.session, trial.id)
        if alloc is not None:
            request_preemption(tx, alloc, PreemptReason.PAUSE)
        elif trial.state == TrialState.QUEUED:
            trial.state = TrialState.PAUSED.value
    tx.act(Reschedule())
    return exp


def activate_experiment(tx: Tx, experiment_id: int) -> Experiment:
    exp = get_experiment(tx, experiment_id)
    state = ExperimentState(exp.state)
    if state == ExperimentState.ACTIVE:
        return exp
    if state != ExperimentState.PAUSED:
        raise InvalidTransition(
            f"experiment {exp.id} is {state.value}; only a PAUSED experiment can be activated"
        )
    exp.state = ExperimentState.ACTIVE.value
    searcher = tx.searchers.searcher(exp)
    if not searcher.started:
        apply_ops(tx, exp, searcher.initial_operations())
    for trial in q.live_trials(tx.session, exp.id):
        if trial.state != TrialState.PAUSED or q.live_allocation(tx.session, trial.id):
            # A trial still stopping from the pause keeps stopping (its code may already
            # have seen the signal); its exit queues it again, as the experiment is active.
            continue
        if searcher.is_closed(trial.request_id) and trial.runs > 0:
            # Closed by the searcher while the pause stopped it: it is done.
            _finish_trial(tx, trial, TrialState.COMPLETED)
            apply_ops(tx, exp, searcher.trial_closed(trial.request_id))
        elif _has_work(searcher, trial):
            trial.state = TrialState.QUEUED.value
    tx.act(Reschedule())
    return exp


def _has_work(searcher: Searcher, trial: Trial) -> bool:
    if searcher.is_closed(trial.request_id):
        return False
    return (
        searcher.code_driven
        or trial.runs == 0
        or searcher.pending_length(trial.request_id) is not None
    )


def cancel_experiment(tx: Tx, experiment_id: int) -> Experiment:
    exp = get_experiment(tx, experiment_id)
    state = ExperimentState(exp.state)
    if state.terminal or state in (
        ExperimentState.STOPPING_CANCELED,
        ExperimentState.STOPPING_KILLED,
    ):
        if state.terminal:
            raise InvalidTransition(f"experiment {exp.id} has already ended ({state.value})")
        return exp
    exp.state = ExperimentState.STOPPING_CANCELED.value
    for trial in q.live_trials(tx.session, exp.id):
        alloc = q.live_allocation(tx.session, trial.id)
        if alloc is not None:
            request_preemption(tx, alloc, PreemptReason.CANCEL)
            trial.state = TrialState.STOPPING_CANCELED.value
        else:
            _finish_trial(tx, trial, TrialState.CANCELED)
    maybe_finish_experiment(tx, exp)
    return exp


def kill_experiment(tx: Tx, experiment_id: int) -> Experiment:
    exp = get_experiment(tx, experiment_id)
    state = ExperimentState(exp.state)
    if state.terminal:
        raise InvalidTransition(f"experiment {exp.id} has already ended ({state.value})")
    exp.state = ExperimentState.STOPPING_KILLED.value
    for trial in q.live_trials(tx.session, exp.id):
        alloc = q.live_allocation(tx.session, trial.id)
        if alloc is not None:
            kill_allocation(tx, alloc)
            trial.state = TrialState.STOPPING_KILLED.value
        else:
            _finish_trial(tx, trial, TrialState.CANCELED)
    maybe_finish_experiment(tx, exp)
    return exp


def set_archived(tx: Tx, experiment_id: int, archived: bool) -> Experiment:
    exp = get_experiment(tx, experiment_id)
    if archived and not ExperimentState(exp.state).terminal:
        raise InvalidTransition(
            f"experiment {exp.id} is {exp.state}; only an ended experiment (COMPLETED, "
            "CANCELED or ERROR) can be archived — cancel or kill it first"
        )
    exp.archived = archived
    return exp


def kill_trial(tx: Tx, trial_id: int) -> Trial:
    trial = get_trial(tx, trial_id)
    if TrialState(trial.state).terminal:
        raise InvalidTransition(f"trial {trial.id} has already ended ({trial.state})")
    alloc = q.live_allocation(tx.session, trial.id)
    if alloc is not None:
        kill_allocation(tx, alloc)
        trial.state = TrialState.STOPPING_KILLED.value
        return trial
    exp = get_experiment(tx, trial.experiment_id)
    _finish_trial(tx, trial, TrialState.CANCELED)
    searcher = tx.searchers.searcher(exp)
    apply_ops(tx, exp, searcher.trial_exited_early(trial.request_id, ExitedReason.USER_CANCELED))
    return trial


# -- allocations ---------------------------------------------------------------------------------


def request_preemption(tx: Tx, alloc: Allocation, reason: PreemptReason) -> None:
    """Ask an allocation to checkpoint and exit. A stronger reason replaces a weaker one."""
    current = PreemptReason(alloc.preempt) if alloc.preempt else None
    if current is not None and _STRENGTH[current] >= _STRENGTH[reason]:
        return
    if current is None:
        alloc.preempt_at = tx.now
    alloc.preempt = reason.value
    tx.act(Wake(("preempt", alloc.id)))
    tx.act(Wake(("op", alloc.trial_id)))


_STRENGTH = {
    PreemptReason.SCHEDULER: 1,
    PreemptReason.PAUSE: 2,
    PreemptReason.EARLY_STOP: 3,
    PreemptReason.SHUTDOWN: 3,
    PreemptReason.CANCEL: 4,
}


def enforce_preemption_timeouts(tx: Tx, timeouts: dict[str, float]) -> list[str]:
    """Kill allocations asked to stop longer ago than their ``preemption_timeout`` (the
    experiment's, else their pool's, from ``timeouts``). Returns the ones killed."""
    killed = []
    for alloc, _trial, exp in q.preempting_allocations(tx.session):
        own = exp.config.get("preemption_timeout")
        limit = float(own) if own is not None else timeouts.get(alloc.pool, 3600.0)
        if alloc.preempt_at is not None and tx.now - alloc.preempt_at >= limit:
            alloc.overdue = True
            for agent_id in alloc.slots or {}:
                tx.act(KillAllocation(agent_id, alloc.id))
            killed.append(alloc.id)
    return killed


OVERDUE = "did not stop within its preemption timeout; killed"


def needs_kill(alloc: Allocation) -> bool:
    """Whether a live allocation's processes must be killed (a kill not yet obeyed)."""
    failed = any(code is None or code != 0 for code in (alloc.exits or {}).values())
    return alloc.kill_requested or alloc.overdue or failed


def kill_allocation(tx: Tx, alloc: Allocation) -> None:
    alloc.kill_requested = True
    for agent_id in alloc.slots or {}:
        tx.act(KillAllocation(agent_id, alloc.id))


def allocation_started(tx: Tx, allocation_id: str, agent_id: str) -> None:
    alloc = tx.session.get(Allocation, allocation_id)
    if (
        alloc is not None
        and alloc.state == AllocationState.ASSIGNED
        and agent_id in (alloc.slots or {})
    ):
        alloc.state = AllocationState.RUNNING
        alloc.started_at = tx.now


def allocation_exited(tx: Tx, allocation_id: str, exit_code: int | None, reason: str) -> None:
    """An allocation's process ended (or was lost): decide where its trial goes next."""
    alloc = tx.session.get(Allocation, allocation_id)
    if alloc is None or alloc.state == AllocationState.TERMINATED:
        return
    never_started = alloc.state == AllocationState.ASSIGNED and exit_code is None
    alloc.state = AllocationState.TERMINATED
    alloc.exit_code = exit_code
    alloc.exit_reason = OVERDUE if alloc.overdue else reason
    alloc.ended_at = tx.now
    tx.act(Reschedule())
    tx.act(Wake(("op", alloc.trial_id)))
    tx.act(Wake(("logs", alloc.trial_id)))
    trial = get_trial(tx, alloc.trial_id)
    exp = get_experiment(tx, trial.experiment_id)
    searcher = tx.searchers.searcher(exp)
    tx.touched.add(exp.id)
    rid = trial.request_id
    exp_state = ExperimentState(exp.state)
    preempt = PreemptReason(alloc.preempt) if alloc.preempt else None
    cfg = tx.searchers.config(exp)
    ops: list[Operation] = []

    if (
        alloc.kill_requested
        or preempt is PreemptReason.CANCEL
        or exp_state in (ExperimentState.STOPPING_CANCELED, ExperimentState.STOPPING_KILLED)
    ):
        _finish_trial(tx, trial, TrialState.CANCELED, message=_describe_exit(exit_code, reason))
        if not exp_state.stopping:
            ops = searcher.trial_exited_early(rid, ExitedReason.USER_CANCELED)
    elif trial.early_exit == ExitedReason.INVALID_HP:
        _finish_trial(tx, trial, TrialState.COMPLETED, message="invalid hyperparameters")
        ops = searcher.trial_exited_early(rid, ExitedReason.INVALID_HP)
    elif searcher.is_closed(rid) or preempt in (PreemptReason.EARLY_STOP, PreemptReason.SHUTDOWN):
        # Checked before pauses and preemptions: a trial its searcher is done with is done,
        # whatever else asked it to stop meanwhile.
        early = _stopped_early(tx, exp, searcher, trial, preempt is PreemptReason.EARLY_STOP)
        _finish_trial(tx, trial, TrialState.COMPLETED, early_stopped=early)
        ops = searcher.trial_closed(rid)
    elif preempt in (PreemptReason.PAUSE, PreemptReason.SCHEDULER) and (
        exit_code == 0 or exit_code is None or preempt is PreemptReason.PAUSE or alloc.overdue
    ):
        _requeue_or_pause(trial, exp)
    elif exit_code == 0:
        if searcher.code_driven:
            _finish_trial(tx, trial, TrialState.COMPLETED)
            ops = searcher.trial_closed(rid)
        elif alloc.released:
            # It finished its operation and asked for another that has not come yet.
            if searcher.pending_length(rid) is not None:
                _requeue_or_pause(trial, exp)
            else:
                trial.state = TrialState.PAUSED.value
        elif searcher.pending_length(rid) is None:
            _finish_trial(tx, trial, TrialState.COMPLETED)
            ops = searcher.trial_closed(rid)
        else:
            _finish_trial(
                tx,
                trial,
                TrialState.COMPLETED,
                message="its code exited before finishing the searcher's operation",
            )
            ops = searcher.trial_exited_early(rid, ExitedReason.USER_CANCELED)
    elif never_started:
        # Its start was lost (a master restart between reserving the slots and telling the
        # agent): not the code's failure, so it does not count against max_restarts.
        trial.message = f"started again: {_describe_exit(exit_code, reason)}"
        _requeue_or_pause(trial, exp)
    else:
        trial.restarts += 1
        detail = _describe_exit(exit_code, reason)
        if trial.restarts <= cfg.max_restarts:
            trial.message = f"restart {trial.restarts} of {cfg.max_restarts} after: {detail}"
            _requeue_or_pause(trial, exp)
        else:
            _finish_trial(
                tx,
                trial,
                TrialState.ERROR,
                message=f"failed {trial.restarts} times (max_restarts: {cfg.max_restarts}); "
                f"last: {detail}",
            )
            ops = searcher.trial_exited_early(rid, ExitedReason.ERRORED)
    apply_ops(tx, exp, ops)


def _stopped_early(
    tx: Tx, exp: Experiment, searcher: Searcher, trial: Trial, told_to_stop: bool = False
) -> bool:
    """Closed by its searcher before the length the search plans trials for (an ASHA trial
    left in a lower rung, a trial a stopping rule cut short). With no planned length, a trial
    counts as stopped early when it was told to stop while running."""
    if trial.runs == 0:
        return False
    planned, _ = search_length(tx.searchers.config(exp).searcher)
    record = searcher.trials.get(trial.request_id)
    if planned is None or record is None:
        return told_to_stop
    return record.completed_length < planned


def _requeue_or_pause(trial: Trial, exp: Experiment) -> None:
    active = exp.state == ExperimentState.ACTIVE
    trial.state = (TrialState.QUEUED if active else TrialState.PAUSED).value


def _describe_exit(exit_code: int | None, reason: str) -> str:
    if exit_code is None:
        return reason or "the process was lost"
    if exit_code < 0:
        return f"killed by signal {-exit_code}" + (f" ({reason})" if reason else "")
    return f"exit code {exit_code}" + (f" ({reason})" if reason else "")


def _finish_trial(
    tx: Tx,
    trial: Trial,
    state: TrialState,
    *,
    early_stopped: bool = False,
    message: str = "",
) -> None:
    trial.state = state.value
    trial.ended_at = tx.now
    trial.early_stopped = trial.early_stopped or early_stopped
    if state == TrialState.COMPLETED:
        trial.progress = 1.0
    if message:
        trial.message = message
    tx.act(Wake(("op", trial.id)))
    tx.act(Wake(("logs", trial.id)))
