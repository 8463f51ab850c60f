"""The states every layer names: experiments, trials, allocations, jobs, checkpoints, instances.

They are strings on the wire and in the database; spelling one anywhere else as a literal is
refused by a test, so a renamed or added state is changed in this one place.
"""

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
        return self in TERMINAL_EXPERIMENT_STATES

    @property
    def stopping(self) -> bool:
        return self in _STOPPING_EXPERIMENT


TERMINAL_EXPERIMENT_STATES = (
    ExperimentState.COMPLETED,
    ExperimentState.CANCELED,
    ExperimentState.ERROR,
)
_STOPPING_EXPERIMENT = (
    ExperimentState.STOPPING_COMPLETED,
    ExperimentState.STOPPING_CANCELED,
    ExperimentState.STOPPING_KILLED,
    ExperimentState.STOPPING_ERROR,
)


class TrialState(StrEnum):
    QUEUED = "QUEUED"
    """Wants slots: waiting in its pool's queue."""
    RUNNING = "RUNNING"
    """Has an allocation (starting or running)."""
    PAUSED = "PAUSED"
    """Neither running nor asking for slots because its experiment is paused (a user's pause)."""
    WAITING = "WAITING"
    """Neither running nor asking for slots because its searcher holds it: it finished the
    training it was given and waits for the searcher to decide whether it trains further (an
    ASHA trial at a rung, waiting for promotion). Its slots are free; a promotion queues it."""
    STOPPING_COMPLETED = "STOPPING_COMPLETED"
    STOPPING_CANCELED = "STOPPING_CANCELED"
    STOPPING_KILLED = "STOPPING_KILLED"
    STOPPING_ERROR = "STOPPING_ERROR"
    COMPLETED = "COMPLETED"
    CANCELED = "CANCELED"
    ERROR = "ERROR"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL_TRIAL_STATES


TERMINAL_TRIAL_STATES = (TrialState.COMPLETED, TrialState.CANCELED, TrialState.ERROR)


class AllocationState(StrEnum):
    ASSIGNED = "ASSIGNED"
    """Slots reserved and the start sent to the agent."""
    RUNNING = "RUNNING"
    """The agent started the process."""
    TERMINATED = "TERMINATED"
    """The process exited (or was lost with its agent)."""

    @property
    def live(self) -> bool:
        return self in LIVE_ALLOCATION_STATES


LIVE_ALLOCATION_STATES = (AllocationState.ASSIGNED, AllocationState.RUNNING)


class ExitedReason(StrEnum):
    """Why a trial ended before its searcher closed it (what the harness reports as its early
    exit, and what the searcher is told)."""

    ERRORED = "errored"
    """It failed more often than ``max_restarts`` allows."""
    USER_CANCELED = "user_canceled"
    """The user killed it, or its code stopped before finishing its operations."""
    INVALID_HP = "invalid_hp"
    """Its code declared the hyperparameters invalid; the searcher replaces it."""


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
    CLUSTER_STOP = "cluster_stop"
    """The cluster is being stopped (``assay down``): the trial waits, queued, for the cluster
    to come back and resumes from its latest checkpoint. However it exits, it is not a failure
    and costs no restart."""


class JobState(StrEnum):
    """Where a job stands in its pool's queue (``assay job list``)."""

    QUEUED = "QUEUED"
    """It waits for slots."""
    SCHEDULED = "SCHEDULED"
    """Slots are reserved for it until the ones it preempted come free; nothing of it runs."""
    RUNNING = "RUNNING"
    """Some of it runs: a trial of the experiment, an instance of the job (with slots or none)."""


class CheckpointState(StrEnum):
    ACTIVE = "ACTIVE"
    """Stored and kept."""
    DELETING = "DELETING"
    """Its experiment ended and its GC policy does not keep it; deletion from storage pending."""
    DELETED = "DELETED"
    """Deleted from storage; the row stays as a record."""


class InstanceState(StrEnum):
    """A machine an autoscaling provider runs for a pool."""

    LAUNCHING = "LAUNCHING"
    """Its launch command ran; its agent has not connected yet."""
    RUNNING = "RUNNING"
    """Its agent connected."""
    TERMINATING = "TERMINATING"
    """Chosen to go; its terminate command is pending or running."""
    TERMINATED = "TERMINATED"
    """Its terminate command finished."""

    @property
    def live(self) -> bool:
        return self in LIVE_INSTANCE_STATES


LIVE_INSTANCE_STATES = (InstanceState.LAUNCHING, InstanceState.RUNNING)


class TaskState(StrEnum):
    """A job that is not an experiment (an OpenPAI job, a command, a generic task), with
    OpenPAI's state names."""

    WAITING = "WAITING"
    """Queued: its instances wait to be placed (all together)."""
    RUNNING = "RUNNING"
    """Its instances were placed and run."""
    STOPPING = "STOPPING"
    """A user stopped it; its processes are being ended."""
    STOPPED = "STOPPED"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL_TASK_STATES


TERMINAL_TASK_STATES = (TaskState.STOPPED, TaskState.SUCCEEDED, TaskState.FAILED)


class TaskInstanceState(StrEnum):
    """One instance of a task role of such a job."""

    WAITING = "WAITING"
    """Waits to be placed (first run, or a retry)."""
    RUNNING = "RUNNING"
    """Placed on an agent: starting or running."""
    SUCCEEDED = "SUCCEEDED"
    """Its commands ended with exit code 0."""
    FAILED = "FAILED"
    """Its commands failed (or its agent was lost) and no retry is left."""
    STOPPED = "STOPPED"
    """Ended by a stop, or because the job's outcome was decided without it."""

    @property
    def ended(self) -> bool:
        return self in ENDED_TASK_INSTANCE_STATES


ENDED_TASK_INSTANCE_STATES = (
    TaskInstanceState.SUCCEEDED,
    TaskInstanceState.FAILED,
    TaskInstanceState.STOPPED,
)


class NNITrialStatus(StrEnum):
    """A trial as NNI names its statuses (``assay nni`` output)."""

    WAITING = "WAITING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    USER_CANCELED = "USER_CANCELED"
    SYS_CANCELED = "SYS_CANCELED"
    EARLY_STOPPED = "EARLY_STOPPED"

    @classmethod
    def of(cls, state: TrialState, *, early_stopped: bool) -> NNITrialStatus:
        """NNI's name for an assay trial state (``early_stopped``: its searcher closed it
        early)."""
        if state in (TrialState.QUEUED, TrialState.PAUSED, TrialState.WAITING):
            return cls.WAITING
        if state == TrialState.COMPLETED:
            return cls.EARLY_STOPPED if early_stopped else cls.SUCCEEDED
        if state in (TrialState.ERROR, TrialState.STOPPING_ERROR):
            return cls.FAILED
        if state in (TrialState.CANCELED, TrialState.STOPPING_CANCELED, TrialState.STOPPING_KILLED):
            return cls.USER_CANCELED
        return cls.RUNNING


class NNIExperimentStatus(StrEnum):
    """An experiment as NNI names its statuses (``assay nni`` output)."""

    RUNNING = "RUNNING"
    STOPPING = "STOPPING"
    STOPPED = "STOPPED"
    DONE = "DONE"
    NO_MORE_TRIAL = "NO_MORE_TRIAL"
    ERROR = "ERROR"

    @classmethod
    def of(cls, state: ExperimentState) -> NNIExperimentStatus:
        """NNI's name for an assay experiment state: a paused experiment is STOPPED (resumable,
        as nnictl's), a finished search DONE."""
        if state == ExperimentState.COMPLETED:
            return cls.DONE
        if state in (ExperimentState.PAUSED, ExperimentState.CANCELED):
            return cls.STOPPED
        if state == ExperimentState.ERROR:
            return cls.ERROR
        if state.stopping:
            return cls.STOPPING
        return cls.RUNNING


STATE_ENUMS: tuple[type[StrEnum], ...] = (
    ExperimentState,
    TrialState,
    AllocationState,
    JobState,
    CheckpointState,
    InstanceState,
    TaskState,
    TaskInstanceState,
    NNITrialStatus,
    NNIExperimentStatus,
)
"""The enums whose values are states (upper-case words no other string may spell)."""
