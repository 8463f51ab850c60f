"""The experiment and trial state machines, as pure functions: facts in, a decision out.

Nothing here reads or writes a row: :mod:`assay.master.experiments._lifecycle` gathers the facts
from the transaction, asks these functions, and applies the decision (rows, searcher events, signals
to agents). That keeps every rule in one place and lets the tests drive it with generated facts.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from assay.errors import InvalidTransition
from assay.protocol import ExitedReason, ExperimentState, PreemptReason, TrialState

# -- experiments ----------------------------------------------------------------------------------


class ExperimentEvent(StrEnum):
    PAUSE = "pause"
    ACTIVATE = "activate"
    CANCEL = "cancel"
    KILL = "kill"
    SEARCHER_DONE = "searcher_done"
    """The searcher shut the search down: it found what it was after."""
    SEARCHER_FAILED = "searcher_failed"
    """The searcher shut the search down because it cannot go on."""


STOPPING_TO_TERMINAL = {
    ExperimentState.STOPPING_COMPLETED: ExperimentState.COMPLETED,
    ExperimentState.STOPPING_CANCELED: ExperimentState.CANCELED,
    ExperimentState.STOPPING_KILLED: ExperimentState.CANCELED,
    ExperimentState.STOPPING_ERROR: ExperimentState.ERROR,
}
"""Where a stopping experiment ends once none of its trials is live."""

_TOGGLES = {
    ExperimentEvent.PAUSE: (
        ExperimentState.ACTIVE,
        ExperimentState.PAUSED,
        "only an ACTIVE experiment can be paused",
    ),
    ExperimentEvent.ACTIVATE: (
        ExperimentState.PAUSED,
        ExperimentState.ACTIVE,
        "only a PAUSED experiment can be activated",
    ),
}
"""The user's two reversible moves: (from, to, what the refusal says otherwise)."""


def experiment_transition(
    experiment_id: int, state: ExperimentState, event: ExperimentEvent
) -> ExperimentState | None:
    """The experiment's next state after ``event``; None when the event changes nothing (the
    experiment is already where it would go). Raises :class:`InvalidTransition` when a user's
    command cannot apply."""
    toggle = _TOGGLES.get(event)
    if toggle is not None:
        source, target, what = toggle
        if state == target:
            return None
        if state != source:
            raise InvalidTransition(f"experiment {experiment_id} is {state.value}; {what}")
        return target
    if event in (ExperimentEvent.CANCEL, ExperimentEvent.KILL) and state.terminal:
        raise InvalidTransition(f"experiment {experiment_id} has already ended ({state.value})")
    if event is ExperimentEvent.CANCEL:
        if state in (ExperimentState.STOPPING_CANCELED, ExperimentState.STOPPING_KILLED):
            return None
        return ExperimentState.STOPPING_CANCELED
    if event is ExperimentEvent.KILL:
        # Repeated while stopping: its live allocations are told again.
        return ExperimentState.STOPPING_KILLED
    if state.terminal or state.stopping:
        return None
    if event is ExperimentEvent.SEARCHER_FAILED:
        return ExperimentState.STOPPING_ERROR
    return ExperimentState.STOPPING_COMPLETED


def experiment_finished(state: ExperimentState, live_trials: bool) -> ExperimentState | None:
    """The terminal state a stopping experiment reaches once no trial is live; None otherwise."""
    if not state.stopping or live_trials:
        return None
    return STOPPING_TO_TERMINAL[state]


def check_archivable(experiment_id: int, state: ExperimentState, archived: bool) -> None:
    if archived and not state.terminal:
        raise InvalidTransition(
            f"experiment {experiment_id} is {state.value}; only an ended experiment (COMPLETED, "
            "CANCELED or ERROR) can be archived — cancel or kill it first"
        )


# -- trials under their experiment's events ----------------------------------------------------


@dataclass(frozen=True)
class TrialFacts:
    """What an experiment event needs to know of one of its live trials."""

    state: TrialState
    has_allocation: bool
    """A live allocation runs (or is starting) it."""
    runs: int = 0
    closed: bool = False
    """Its searcher closed it."""
    has_work: bool = False
    """Its searcher has training for it to do."""


@dataclass(frozen=True)
class TrialOrder:
    """What happens to one trial; fields left at their defaults mean "unchanged"."""

    state: TrialState | None = None
    ended: bool = False
    """It reached ``state`` (terminal) now: its end time is recorded."""
    preempt: PreemptReason | None = None
    """Ask its allocation to checkpoint and exit, for this reason."""
    kill: bool = False
    """Kill its allocation's processes."""
    searcher_closed: bool = False
    """Tell the searcher the trial is done (``trial_closed``)."""


UNCHANGED = TrialOrder()


def trial_on_event(event: ExperimentEvent, trial: TrialFacts) -> TrialOrder:
    """What ``event`` on its experiment does to a live trial."""
    running = trial.has_allocation
    if event is ExperimentEvent.PAUSE:
        if running:
            # Never a kill: the trial checkpoints at the end of its current unit of work.
            return TrialOrder(preempt=PreemptReason.PAUSE)
        if trial.state in (TrialState.QUEUED, TrialState.WAITING):
            # A trial waiting for its searcher is paused too: the user's pause is what shows.
            return TrialOrder(state=TrialState.PAUSED)
        return UNCHANGED
    if event is ExperimentEvent.ACTIVATE:
        if trial.state != TrialState.PAUSED or running:
            # A trial still stopping from the pause keeps stopping (its code may already have
            # seen the signal); its exit queues it again, as the experiment is active.
            return UNCHANGED
        if trial.closed and trial.runs > 0:
            # Closed by the searcher while the pause stopped it: it is done.
            return TrialOrder(state=TrialState.COMPLETED, ended=True, searcher_closed=True)
        if trial.has_work:
            return TrialOrder(state=TrialState.QUEUED)
        if not trial.closed:
            # It had finished what it was given: it waits for its searcher again.
            return TrialOrder(state=TrialState.WAITING)
        return UNCHANGED
    if not running:
        return TrialOrder(state=TrialState.CANCELED, ended=True)
    if event is ExperimentEvent.CANCEL:
        return TrialOrder(state=TrialState.STOPPING_CANCELED, preempt=PreemptReason.CANCEL)
    if event is ExperimentEvent.KILL:
        return TrialOrder(state=TrialState.STOPPING_KILLED, kill=True)
    if event is ExperimentEvent.SEARCHER_FAILED:
        return TrialOrder(preempt=PreemptReason.CANCEL)
    return TrialOrder(preempt=PreemptReason.SHUTDOWN)


def has_work(*, closed: bool, code_driven: bool, runs: int, pending: bool) -> bool:
    """Whether an activated trial has training to do (and should queue for slots)."""
    return not closed and (code_driven or runs == 0 or pending)


_STRENGTH = {
    PreemptReason.SCHEDULER: 1,
    PreemptReason.PAUSE: 2,
    PreemptReason.CLUSTER_STOP: 2,
    PreemptReason.EARLY_STOP: 3,
    PreemptReason.SHUTDOWN: 3,
    PreemptReason.CANCEL: 4,
}


def stronger_preemption(current: PreemptReason | None, reason: PreemptReason) -> bool:
    """Whether ``reason`` replaces the allocation's ``current`` one (a weaker one never does:
    a canceled trial must not be queued again because the scheduler also wanted its slots)."""
    return current is None or _STRENGTH[reason] > _STRENGTH[current]


def stopped_early(runs: int, planned_reached: bool | None, told_to_stop: bool) -> bool:
    """Whether a trial its searcher closed stopped before the length the search plans trials
    for (an ASHA trial left in a lower rung, one a stopping rule cut short).
    ``planned_reached`` is None when the search plans no length: then a trial counts as stopped
    early when it was told to stop while running."""
    if runs == 0:
        return False
    if planned_reached is None:
        return told_to_stop
    return not planned_reached


# -- a trial's allocation exits ---------------------------------------------------------------


@dataclass(frozen=True)
class ExitFacts:
    """Everything the decision on an ended allocation depends on."""

    trial_state: TrialState
    experiment_state: ExperimentState
    exit_code: int | None
    """None: the processes were lost (their agent went away)."""
    reason: str
    started: bool
    """The agent reported the processes started (the allocation got past ASSIGNED)."""
    preempt: PreemptReason | None
    kill_requested: bool
    overdue: bool
    """It was killed for outliving its preemption timeout."""
    released: bool
    """It finished its operation and was told to exit while the searcher decides."""
    invalid_hp: bool
    """Its code reported its hyperparameters invalid."""
    closed: bool
    """Its searcher closed it."""
    code_driven: bool
    pending: bool
    """Its searcher has an operation for it that it did not finish."""
    restarts: int
    max_restarts: int
    runs: int
    planned_reached: bool | None
    """Whether it trained to the search's planned length (None: no planned length)."""
    latest_checkpoint: str | None
    timed_out: bool = False
    """It was killed for running longer than ``max_trial_duration``."""
    agent_lost: bool = False
    """Its processes were lost with their agent (the agent lost past its grace, stopped, or
    back without them): the cluster's loss, not the trial's failure."""
    infra_restarts: int = 0
    """How often it was started again after losing its agent so far."""
    lost_in_row: int = 0
    """Its agent losses since one of its runs last saved a checkpoint."""
    checkpointed: bool = False
    """This run saved a checkpoint."""


CLUSTER_STOPPED = (
    "paused while the cluster was stopped (`assay down`); it resumes from its latest "
    "checkpoint when the cluster is up"
)
"""The message of a trial its cluster's stop sent back to the queue (cleared when it restarts)."""

TIMED_OUT = "ran longer than max_trial_duration"
"""The message (and the allocation's exit reason) of a trial ended by its time limit."""

MAX_LOST_IN_ROW = 5
"""The most agent losses a trial may suffer in a row without saving a checkpoint; the next one
ends it in ERROR. A loss is the cluster's, so it never spends ``max_restarts``; but a trial
that brings its machine down (exhausts its memory, panics its kernel) looks like one that keeps
losing its agent, and would otherwise take every agent down in turn, forever. A trial that
checkpoints between losses makes progress, so its count starts again and it is never stopped
for losses alone: that is what long trials on machines that come and go need."""


@dataclass(frozen=True)
class ClosedEvent:
    """Tell the searcher ``trial_closed``."""


@dataclass(frozen=True)
class ExitedEarlyEvent:
    """Tell the searcher ``trial_exited_early`` with ``reason``."""

    reason: ExitedReason


SearcherEvent = ClosedEvent | ExitedEarlyEvent


@dataclass(frozen=True)
class ExitDecision:
    state: TrialState
    ended: bool
    """It reached a terminal ``state`` now."""
    restarts: int
    resume_from: str | None
    """The checkpoint its next run starts from."""
    message: str | None = None
    """Its new message; None keeps the current one."""
    early_stopped: bool = False
    searcher: SearcherEvent | None = None
    infra_restarts: int = 0
    """How often it has been started again after losing its agent (never toward
    ``max_restarts``)."""
    lost_in_row: int = 0
    """Its agent losses since one of its runs last saved a checkpoint."""


def describe_exit(exit_code: int | None, reason: str) -> str:
    if exit_code is None:
        return reason or "the process was lost"
    if exit_code < 0:
        return f"killed by signal {-exit_code}" + (f" ({reason})" if reason else "")
    return f"exit code {exit_code}" + (f" ({reason})" if reason else "")


def decide_exit(f: ExitFacts) -> ExitDecision:
    """Where a trial goes when its allocation ends (its processes exited, or were lost)."""

    # A run that saved a checkpoint made progress: its losses before it no longer count.
    in_row = 0 if f.checkpointed else f.lost_in_row

    def stay(
        state: TrialState,
        message: str | None = None,
        restarts: int = f.restarts,
        *,
        infra: int = f.infra_restarts,
        lost: int = in_row,
    ) -> ExitDecision:
        return ExitDecision(
            state,
            False,
            restarts,
            f.latest_checkpoint,
            message,
            infra_restarts=infra,
            lost_in_row=lost,
        )

    def end(
        state: TrialState,
        message: str | None = None,
        *,
        restarts: int = f.restarts,
        early_stopped: bool = False,
        searcher: SearcherEvent | None = None,
        lost: int = in_row,
    ) -> ExitDecision:
        return ExitDecision(
            state,
            True,
            restarts,
            f.latest_checkpoint,
            message,
            early_stopped,
            searcher,
            f.infra_restarts,
            lost,
        )

    if f.trial_state.terminal:
        return stay(f.trial_state)
    active = f.experiment_state == ExperimentState.ACTIVE
    again = TrialState.QUEUED if active else TrialState.PAUSED
    detail = describe_exit(f.exit_code, f.reason)
    canceled = (ExperimentState.STOPPING_CANCELED, ExperimentState.STOPPING_KILLED)

    if f.timed_out:
        # Before a user's kill: the time limit's kill is the one it records; the searcher
        # counts the trial as one that stopped before finishing.
        return end(
            TrialState.CANCELED,
            f"{TIMED_OUT}: ended",
            searcher=ExitedEarlyEvent(ExitedReason.USER_CANCELED),
        )
    if f.kill_requested or f.preempt is PreemptReason.CANCEL or f.experiment_state in canceled:
        # A user's cancel or kill of the trial tells its searcher; the experiment's does not.
        stopping = f.experiment_state.stopping
        event = None if stopping else ExitedEarlyEvent(ExitedReason.USER_CANCELED)
        return end(TrialState.CANCELED, detail, searcher=event)
    if f.invalid_hp:
        return end(
            TrialState.COMPLETED,
            "invalid hyperparameters",
            searcher=ExitedEarlyEvent(ExitedReason.INVALID_HP),
        )
    if f.closed or f.preempt in (PreemptReason.EARLY_STOP, PreemptReason.SHUTDOWN):
        # Before pauses and preemptions: a trial its searcher is done with is done, whatever
        # else asked it to stop meanwhile.
        early = stopped_early(f.runs, f.planned_reached, f.preempt is PreemptReason.EARLY_STOP)
        return end(TrialState.COMPLETED, early_stopped=early, searcher=ClosedEvent())
    if f.preempt is PreemptReason.CLUSTER_STOP:
        # Whatever ended it (its own checkpoint and exit, the kill after the grace, its agent
        # stopping or lost): the cluster's stop, not the trial's failure.
        return stay(again, CLUSTER_STOPPED)
    if f.preempt in (PreemptReason.PAUSE, PreemptReason.SCHEDULER) and (
        f.exit_code == 0 or f.exit_code is None or f.preempt is PreemptReason.PAUSE or f.overdue
    ):
        return stay(again)
    if f.exit_code == 0:
        if f.code_driven:
            return end(TrialState.COMPLETED, searcher=ClosedEvent())
        if f.released:
            # It finished its operation and asked for another that has not come yet: it waits
            # for its searcher (its experiment paused, for the user's activation).
            if f.pending:
                return stay(again)
            return stay(TrialState.WAITING if active else TrialState.PAUSED)
        if not f.pending:
            return end(TrialState.COMPLETED, searcher=ClosedEvent())
        return end(
            TrialState.COMPLETED,
            "its code exited before finishing the searcher's operation",
            searcher=ExitedEarlyEvent(ExitedReason.USER_CANCELED),
        )
    if not f.started and f.exit_code is None:
        # Its start was lost (a master restart between reserving the slots and telling the
        # agent): not the code's failure, so it does not count against max_restarts.
        return stay(again, f"started again: {detail}")
    if f.agent_lost:
        lost = in_row + 1
        if lost > MAX_LOST_IN_ROW:
            return end(
                TrialState.ERROR,
                f"lost its agent {lost} times in a row without saving a checkpoint (at most "
                f"{MAX_LOST_IN_ROW}): it may be what brings its agents down, e.g. by exhausting "
                f"their memory; last: {detail}",
                lost=lost,
                searcher=ExitedEarlyEvent(ExitedReason.ERRORED),
            )
        infra = f.infra_restarts + 1
        return stay(
            again,
            f"started again after losing its agent (not counted toward max_restarts): {detail}",
            infra=infra,
            lost=lost,
        )
    restarts = f.restarts + 1
    if restarts <= f.max_restarts:
        return stay(again, f"restart {restarts} of {f.max_restarts} after: {detail}", restarts)
    return end(
        TrialState.ERROR,
        f"failed {restarts} {'time' if restarts == 1 else 'times'} "
        f"(max_restarts: {f.max_restarts}); last: {detail}",
        restarts=restarts,
        searcher=ExitedEarlyEvent(ExitedReason.ERRORED),
    )
