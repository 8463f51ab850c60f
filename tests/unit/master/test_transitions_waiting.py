"""A trial its searcher holds (released after its operation, waiting for a promotion) is
WAITING, a state of its own: PAUSED is the user's pause alone. Pausing the experiment shows its
waiting trials PAUSED; activating it makes them WAITING again, or QUEUED when promoted."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from assay.master.experiments._transitions import (
    ExitFacts,
    ExperimentEvent,
    TrialFacts,
    decide_exit,
    trial_on_event,
)
from assay.protocol import ExperimentState, TrialState
from tests.unit.master.test_transitions import crash


def released(**changes: object) -> ExitFacts:
    """A trial that finished its operation, asked for the next, and was told to exit."""
    return crash(**{"exit_code": 0, "released": True, "pending": False, **changes})


def test_a_released_trial_waits_for_its_searcher_not_paused() -> None:
    decision = decide_exit(released())
    assert (decision.state, decision.ended) == (TrialState.WAITING, False)
    assert decision.restarts == 0 and decision.resume_from == "ckpt"


def test_a_released_trial_promoted_meanwhile_is_queued() -> None:
    assert decide_exit(released(pending=True)).state == TrialState.QUEUED


def test_a_trial_released_while_its_experiment_is_paused_shows_the_pause() -> None:
    decision = decide_exit(released(experiment_state=ExperimentState.PAUSED))
    assert (decision.state, decision.ended) == (TrialState.PAUSED, False)
    promoted = decide_exit(released(experiment_state=ExperimentState.PAUSED, pending=True))
    assert promoted.state == TrialState.PAUSED


def test_pausing_the_experiment_pauses_its_waiting_trials() -> None:
    order = trial_on_event(ExperimentEvent.PAUSE, TrialFacts(TrialState.WAITING, False, runs=2))
    assert order.state == TrialState.PAUSED and not order.ended and order.preempt is None


def test_activating_puts_a_paused_trial_with_nothing_to_do_back_to_waiting() -> None:
    waiting = TrialFacts(TrialState.PAUSED, False, runs=2, closed=False, has_work=False)
    assert trial_on_event(ExperimentEvent.ACTIVATE, waiting).state == TrialState.WAITING
    promoted = TrialFacts(TrialState.PAUSED, False, runs=2, closed=False, has_work=True)
    assert trial_on_event(ExperimentEvent.ACTIVATE, promoted).state == TrialState.QUEUED


def test_activating_leaves_a_waiting_trial_waiting() -> None:
    facts = TrialFacts(TrialState.WAITING, False, runs=2)
    assert trial_on_event(ExperimentEvent.ACTIVATE, facts).state is None


@given(st.sampled_from([ExperimentEvent.CANCEL, ExperimentEvent.KILL]))
def test_a_waiting_trial_is_canceled_with_its_experiment(event: ExperimentEvent) -> None:
    order = trial_on_event(event, TrialFacts(TrialState.WAITING, False, runs=2))
    assert order.ended and order.state == TrialState.CANCELED
