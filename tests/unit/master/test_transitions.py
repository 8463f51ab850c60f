"""The experiment and trial state machines, driven with generated facts: ended stays ended, a
pause never drops a checkpoint, every live state has a way out, restarts stay bounded."""

from __future__ import annotations

from collections import deque

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.errors import InvalidTransition
from assay.master.experiments._transitions import (
    CLUSTER_STOPPED,
    MAX_LOST_IN_ROW,
    ClosedEvent,
    ExitedEarlyEvent,
    ExitFacts,
    ExperimentEvent,
    TrialFacts,
    decide_exit,
    experiment_finished,
    experiment_transition,
    stronger_preemption,
    trial_on_event,
)
from assay.protocol import ExitedReason, ExperimentState, PreemptReason, TrialState

LIVE_TRIAL = [s for s in TrialState if not s.terminal]
RUNNING_STATES = [
    TrialState.RUNNING,
    TrialState.STOPPING_COMPLETED,
    TrialState.STOPPING_CANCELED,
    TrialState.STOPPING_KILLED,
    TrialState.STOPPING_ERROR,
]
"""The states a trial with a live allocation can be in."""


def exits(
    trial_states: list[TrialState] = RUNNING_STATES,
    preempt: st.SearchStrategy[PreemptReason | None] = st.none()
    | st.sampled_from(list(PreemptReason)),
) -> st.SearchStrategy[ExitFacts]:
    return st.integers(0, 4).flatmap(
        lambda max_restarts: st.builds(
            ExitFacts,
            trial_state=st.sampled_from(trial_states),
            experiment_state=st.sampled_from(list(ExperimentState)),
            exit_code=st.none() | st.integers(-15, 3),
            reason=st.sampled_from(["", "killed", "agent a1 was lost"]),
            started=st.booleans(),
            preempt=preempt,
            kill_requested=st.booleans(),
            overdue=st.booleans(),
            released=st.booleans(),
            invalid_hp=st.booleans(),
            closed=st.booleans(),
            code_driven=st.booleans(),
            pending=st.booleans(),
            restarts=st.integers(0, max_restarts),
            max_restarts=st.just(max_restarts),
            runs=st.integers(1, 6),
            planned_reached=st.none() | st.booleans(),
            latest_checkpoint=st.none() | st.uuids().map(str),
            agent_lost=st.booleans(),
            infra_restarts=st.integers(0, 20),
            lost_in_row=st.integers(0, MAX_LOST_IN_ROW),
            checkpointed=st.booleans(),
        )
    )


trial_facts = st.builds(
    TrialFacts,
    state=st.sampled_from(LIVE_TRIAL),
    has_allocation=st.booleans(),
    runs=st.integers(0, 5),
    closed=st.booleans(),
    has_work=st.booleans(),
)


# -- ended stays ended ----------------------------------------------------------------------


@given(exits(list(TrialState)))
def test_an_ended_trial_stays_ended_whatever_its_allocation_reports(facts: ExitFacts) -> None:
    decision = decide_exit(facts)
    if facts.trial_state.terminal:
        assert decision.state == facts.trial_state
        assert not decision.ended and decision.searcher is None
    else:
        assert decision.ended == decision.state.terminal


@pytest.mark.parametrize("state", [s for s in ExperimentState if s.terminal])
@pytest.mark.parametrize("event", list(ExperimentEvent))
def test_an_ended_experiment_stays_ended(state: ExperimentState, event: ExperimentEvent) -> None:
    try:
        assert experiment_transition(1, state, event) is None
    except InvalidTransition as exc:
        assert f"experiment 1 is {state.value}" in exc.message or "already ended" in exc.message
    assert experiment_finished(state, live_trials=False) is None


@given(trial_facts, st.sampled_from(list(ExperimentEvent)))
def test_an_event_ends_a_trial_only_in_a_terminal_state(
    facts: TrialFacts, event: ExperimentEvent
) -> None:
    order = trial_on_event(event, facts)
    assert order.ended == (order.state is not None and order.state.terminal)
    if order.preempt is not None or order.kill:
        assert facts.has_allocation, "only a running trial's allocation is signalled"


# -- a pause never drops a checkpoint ----------------------------------------------------------


@given(exits())
def test_no_exit_drops_the_checkpoint_the_trial_resumes_from(facts: ExitFacts) -> None:
    assert decide_exit(facts).resume_from == facts.latest_checkpoint


def _ended_by_other_means(facts: ExitFacts) -> bool:
    """Whether something other than the preemption decides where the trial goes."""
    return (
        facts.kill_requested
        or facts.invalid_hp
        or facts.closed
        or facts.experiment_state
        in (ExperimentState.STOPPING_CANCELED, ExperimentState.STOPPING_KILLED)
    )


@given(exits(preempt=st.just(PreemptReason.PAUSE)))
def test_a_paused_trial_that_exits_waits_to_resume_unless_something_ended_it(
    facts: ExitFacts,
) -> None:
    decision = decide_exit(facts)
    if not _ended_by_other_means(facts):
        assert decision.state in (TrialState.PAUSED, TrialState.QUEUED)
        assert decision.restarts == facts.restarts, "a paused trial's exit is not a failure"


@given(exits(preempt=st.just(PreemptReason.CLUSTER_STOP)))
def test_a_trial_stopped_with_its_cluster_waits_to_resume_whatever_its_exit_code(
    facts: ExitFacts,
) -> None:
    decision = decide_exit(facts)
    if not (facts.timed_out or _ended_by_other_means(facts)):
        # Killed by signal 15 after the grace, or lost with its agent: never a failure.
        assert decision.state in (TrialState.PAUSED, TrialState.QUEUED)
        assert not decision.ended
        assert decision.restarts == facts.restarts
        assert decision.message == CLUSTER_STOPPED


@given(trial_facts)
def test_pausing_asks_a_running_trial_to_checkpoint_and_never_kills_it(facts: TrialFacts) -> None:
    order = trial_on_event(ExperimentEvent.PAUSE, facts)
    assert not order.kill and not order.ended
    if facts.has_allocation:
        assert order.preempt is PreemptReason.PAUSE


@given(st.none() | st.sampled_from(list(PreemptReason)), st.sampled_from(list(PreemptReason)))
def test_a_weaker_reason_never_replaces_a_stronger_one(
    current: PreemptReason | None, reason: PreemptReason
) -> None:
    if current is PreemptReason.CANCEL:
        assert not stronger_preemption(current, reason)
    if current is None:
        assert stronger_preemption(current, reason)
    if stronger_preemption(current, reason) and current is not None:
        assert not stronger_preemption(reason, current)


# -- every live state has a way out -------------------------------------------------------------


def test_every_live_experiment_state_can_reach_an_end() -> None:
    def moves(state: ExperimentState) -> set[ExperimentState]:
        out = set()
        for event in ExperimentEvent:
            try:
                new = experiment_transition(1, state, event)
            except InvalidTransition:
                continue
            if new is not None:
                out.add(new)
        finished = experiment_finished(state, live_trials=False)
        if finished is not None:
            out.add(finished)
        return out

    for start in ExperimentState:
        seen, todo = {start}, deque([start])
        while todo:
            for nxt in moves(todo.popleft()) - seen:
                seen.add(nxt)
                todo.append(nxt)
        assert any(s.terminal for s in seen), f"{start.value} can never end"


@settings(max_examples=300)
@given(st.sampled_from(LIVE_TRIAL), exits())
def test_killing_ends_a_trial_from_every_live_state(state: TrialState, facts: ExitFacts) -> None:
    running = state in RUNNING_STATES
    order = trial_on_event(ExperimentEvent.KILL, TrialFacts(state, has_allocation=running))
    if not running:
        assert order.ended and order.state == TrialState.CANCELED
        return
    assert order.kill and order.state == TrialState.STOPPING_KILLED
    # Whatever else is true when its killed processes' exit arrives, it ends CANCELED.
    killed = ExitFacts(**{**facts.__dict__, "trial_state": order.state, "kill_requested": True})
    decision = decide_exit(killed)
    assert decision.ended and decision.state == TrialState.CANCELED


@given(exits())
def test_every_exit_leaves_the_trial_ended_queued_paused_or_waiting(facts: ExitFacts) -> None:
    decision = decide_exit(facts)
    waits = (TrialState.QUEUED, TrialState.PAUSED, TrialState.WAITING)
    assert decision.ended or decision.state in waits


# -- restarts ---------------------------------------------------------------------------------


@settings(max_examples=300)
@given(exits())
def test_a_trial_never_runs_again_after_more_than_max_restarts_failures(facts: ExitFacts) -> None:
    decision = decide_exit(facts)
    assert decision.restarts - facts.restarts in (0, 1)
    if not decision.ended:
        assert decision.restarts <= facts.max_restarts
    if decision.restarts > facts.max_restarts:
        assert decision.state == TrialState.ERROR
        assert decision.searcher == ExitedEarlyEvent(ExitedReason.ERRORED)


def crash(**changes: object) -> ExitFacts:
    base = dict(
        trial_state=TrialState.RUNNING,
        experiment_state=ExperimentState.ACTIVE,
        exit_code=1,
        reason="",
        started=True,
        preempt=None,
        kill_requested=False,
        overdue=False,
        released=False,
        invalid_hp=False,
        closed=False,
        code_driven=False,
        pending=True,
        restarts=0,
        max_restarts=1,
        runs=1,
        planned_reached=False,
        latest_checkpoint="ckpt",
    )
    return ExitFacts(**{**base, **changes})  # type: ignore[arg-type]


def test_a_crash_is_retried_until_max_restarts_then_errors() -> None:
    first = decide_exit(crash())
    assert (first.state, first.restarts, first.message) == (
        TrialState.QUEUED,
        1,
        "restart 1 of 1 after: exit code 1",
    )
    last = decide_exit(crash(restarts=1))
    assert (last.state, last.ended, last.restarts) == (TrialState.ERROR, True, 2)
    assert last.message == "failed 2 times (max_restarts: 1); last: exit code 1"


def test_a_trial_that_failed_once_says_one_time() -> None:
    only = decide_exit(crash(max_restarts=0))
    assert (only.state, only.restarts) == (TrialState.ERROR, 1)
    assert only.message == "failed 1 time (max_restarts: 0); last: exit code 1"


def test_a_start_that_never_reached_the_agent_is_not_a_failure() -> None:
    lost = decide_exit(crash(started=False, exit_code=None, reason="agent a1 was lost"))
    assert (lost.state, lost.restarts) == (TrialState.QUEUED, 0)
    assert lost.message == "started again: agent a1 was lost"


def test_a_scheduler_preemption_that_crashes_counts_but_one_that_overran_does_not() -> None:
    assert decide_exit(crash(preempt=PreemptReason.SCHEDULER)).restarts == 1
    overdue = decide_exit(crash(preempt=PreemptReason.SCHEDULER, exit_code=-9, overdue=True))
    assert (overdue.state, overdue.restarts) == (TrialState.QUEUED, 0)


def test_a_closed_trial_completes_and_tells_its_searcher_even_when_paused() -> None:
    decision = decide_exit(
        crash(exit_code=0, closed=True, preempt=PreemptReason.PAUSE, planned_reached=True)
    )
    assert (decision.state, decision.early_stopped, decision.searcher) == (
        TrialState.COMPLETED,
        False,
        ClosedEvent(),
    )


@given(
    kill=st.booleans(),
    preempt=st.sampled_from([None, *PreemptReason]),
    closed=st.booleans(),
    code=st.sampled_from([None, 0, 1, -9]),
)
def test_a_trial_killed_by_its_time_limit_ends_canceled_and_says_why(
    kill: bool, preempt: PreemptReason | None, closed: bool, code: int | None
) -> None:
    decision = decide_exit(
        crash(timed_out=True, kill_requested=kill, preempt=preempt, closed=closed, exit_code=code)
    )
    assert (decision.state, decision.ended) == (TrialState.CANCELED, True)
    assert decision.message == "ran longer than max_trial_duration: ended"
    assert decision.searcher == ExitedEarlyEvent(ExitedReason.USER_CANCELED)


# -- losing an agent ----------------------------------------------------------------------------


@settings(max_examples=300)
@given(exits())
def test_losing_its_agent_never_spends_max_restarts(facts: ExitFacts) -> None:
    decision = decide_exit(facts)
    if facts.agent_lost:
        assert decision.restarts == facts.restarts
    assert decision.infra_restarts - facts.infra_restarts in (0, 1)
    if decision.infra_restarts > facts.infra_restarts:
        assert facts.agent_lost and not decision.ended


@settings(max_examples=300)
@given(exits())
def test_a_trial_that_keeps_losing_its_agent_is_bounded_by_losses_without_a_checkpoint(
    facts: ExitFacts,
) -> None:
    decision = decide_exit(facts)
    if not decision.ended:
        assert decision.lost_in_row <= MAX_LOST_IN_ROW
    if decision.lost_in_row > MAX_LOST_IN_ROW:
        assert decision.state == TrialState.ERROR
        assert decision.searcher == ExitedEarlyEvent(ExitedReason.ERRORED)
    if facts.checkpointed and not facts.trial_state.terminal:
        assert decision.lost_in_row <= 1, "a run that saved a checkpoint starts the count again"


def lost(**changes: object) -> ExitFacts:
    return crash(
        **{"exit_code": None, "reason": "agent a1 was lost", "agent_lost": True, **changes}
    )


def test_a_trial_lost_with_its_agent_is_queued_again_and_counted_apart() -> None:
    decision = decide_exit(lost(max_restarts=0, restarts=0))
    assert (decision.state, decision.ended) == (TrialState.QUEUED, False)
    assert (decision.restarts, decision.infra_restarts, decision.lost_in_row) == (0, 1, 1)
    assert decision.message == (
        "started again after losing its agent (not counted toward max_restarts): agent a1 was lost"
    )
    again = decide_exit(lost(max_restarts=0, infra_restarts=1, lost_in_row=1))
    assert (again.state, again.restarts, again.infra_restarts) == (TrialState.QUEUED, 0, 2)


def test_an_agent_stopped_under_a_trial_is_a_loss_whatever_the_signal() -> None:
    decision = decide_exit(lost(exit_code=-15, reason="killed: agent a1 stopped"))
    assert (decision.state, decision.restarts, decision.infra_restarts) == (
        TrialState.QUEUED,
        0,
        1,
    )


def test_a_paused_experiment_keeps_a_trial_lost_with_its_agent_paused() -> None:
    decision = decide_exit(lost(experiment_state=ExperimentState.PAUSED))
    assert (decision.state, decision.ended) == (TrialState.PAUSED, False)
    assert decision.infra_restarts == 1


def test_losses_without_a_checkpoint_end_the_trial_after_the_bound() -> None:
    last_allowed = decide_exit(lost(lost_in_row=MAX_LOST_IN_ROW - 1))
    assert (last_allowed.state, last_allowed.lost_in_row) == (TrialState.QUEUED, MAX_LOST_IN_ROW)
    over = decide_exit(lost(lost_in_row=MAX_LOST_IN_ROW))
    assert (over.state, over.ended, over.restarts) == (TrialState.ERROR, True, 0)
    assert over.message is not None and over.message.startswith(
        f"lost its agent {MAX_LOST_IN_ROW + 1} times in a row without saving a checkpoint"
    )
    assert over.searcher == ExitedEarlyEvent(ExitedReason.ERRORED)
    saved = decide_exit(lost(lost_in_row=MAX_LOST_IN_ROW, checkpointed=True))
    assert (saved.state, saved.lost_in_row) == (TrialState.QUEUED, 1)


def test_a_crash_after_losses_still_counts_toward_max_restarts_and_keeps_the_loss_count() -> None:
    decision = decide_exit(crash(infra_restarts=3, lost_in_row=2))
    assert (decision.restarts, decision.infra_restarts, decision.lost_in_row) == (1, 3, 2)
