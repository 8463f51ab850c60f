"""The states of experiments, trials and allocations, and which moves between them are allowed."""

from __future__ import annotations

from enum import StrEnum


class ExperimentState(StrEnum):
    ACTIVE = "ACTIVE"
    PAUSED = "PAUSED"
    STOPPING_COMPLETED = "STOPPING_COMPLETED"
    STOPPING_CANCELED = "STOPPING_CANCELED"
    STOPPING_KILLED = "STOPPING_KILLED"
    STOPPING_ERROR = "STOPPING_ERROR"
    COMPLETED = "COMPLETED"
    CANCELED = "CANCELED"
    ERROR = "ERROR"

    @property
    def terminal(self) -> bool:
        return self in _TERMINAL_EXPERIMENT

    @property
    def stopping(self) -> bool:
        return self.value.startswith("STOPPING_")


_TERMINAL_EXPERIMENT = frozenset(
    {ExperimentState.COMPLETED, ExperimentState.CANCELED, ExperimentState.ERROR}
)

STOPPING_TO_TERMINAL = {
    ExperimentState.STOPPING_COMPLETED: ExperimentState.COMPLETED,
    ExperimentState.STOPPING_CANCELED: ExperimentState.CANCELED,
    ExperimentState.STOPPING_KILLED: ExperimentState.CANCELED,
    ExperimentState.STOPPING_ERROR: ExperimentState.ERROR,
}


class TrialState(StrEnum):
    QUEUED = "QUEUED"
    """Wants slots: waiting in its pool's queue."""
    RUNNING = "RUNNING"
    """Has an allocation (starting or running)."""
    PAUSED = "PAUSED"
    """Neither running nor asking for slots: its experiment is paused, or it waits for the
    searcher to decide (an ASHA trial between rungs)."""
    STOPPING_COMPLETED = "STOPPING_COMPLETED"
    STOPPING_CANCELED = "STOPPING_CANCELED"
    STOPPING_KILLED = "STOPPING_KILLED"
    STOPPING_ERROR = "STOPPING_ERROR"
    COMPLETED = "COMPLETED"
    CANCELED = "CANCELED"
    ERROR = "ERROR"

    @property
    def terminal(self) -> bool:
        return self in _TERMINAL_TRIAL


_TERMINAL_TRIAL = frozenset({TrialState.COMPLETED, TrialState.CANCELED, TrialState.ERROR})


class AllocationState(StrEnum):
    ASSIGNED = "ASSIGNED"
    """Slots reserved and the start sent to the agent."""
    RUNNING = "RUNNING"
    """The agent started the process."""
    TERMINATED = "TERMINATED"
    """The process exited (or was lost with its agent)."""


class PreemptReason(StrEnum):
    """Why an allocation was asked to checkpoint and exit; decides where its trial goes next."""

    PAUSE = "pause"
    """Its experiment was paused: the trial becomes PAUSED."""
    SCHEDULER = "scheduler"
    """The scheduler needs its slots: the trial is queued again."""
    CANCEL = "cancel"
    """Its experiment was canceled: the trial ends CANCELED."""
    EARLY_STOP = "early_stop"
    """The searcher closed it: the trial ends COMPLETED, marked early-stopped."""
    SHUTDOWN = "shutdown"
    """The searcher finished: the trial ends COMPLETED."""
