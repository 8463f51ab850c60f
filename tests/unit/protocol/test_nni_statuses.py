"""NNI's status names for assay's trial and experiment states."""

from __future__ import annotations

import pytest

from assay.protocol import ExperimentState, NNIExperimentStatus, NNITrialStatus, TrialState


@pytest.mark.parametrize(
    ("state", "early", "nni"),
    [
        (TrialState.QUEUED, False, NNITrialStatus.WAITING),
        (TrialState.PAUSED, False, NNITrialStatus.WAITING),
        (TrialState.RUNNING, False, NNITrialStatus.RUNNING),
        (TrialState.STOPPING_COMPLETED, False, NNITrialStatus.RUNNING),
        (TrialState.COMPLETED, False, NNITrialStatus.SUCCEEDED),
        (TrialState.COMPLETED, True, NNITrialStatus.EARLY_STOPPED),
        (TrialState.ERROR, False, NNITrialStatus.FAILED),
        (TrialState.CANCELED, False, NNITrialStatus.USER_CANCELED),
        (TrialState.STOPPING_KILLED, False, NNITrialStatus.USER_CANCELED),
    ],
)
def test_trial_states_have_nni_names(state: TrialState, early: bool, nni: NNITrialStatus) -> None:
    assert NNITrialStatus.of(state, early_stopped=early) is nni


@pytest.mark.parametrize(
    ("state", "nni"),
    [
        (ExperimentState.ACTIVE, NNIExperimentStatus.RUNNING),
        (ExperimentState.PAUSED, NNIExperimentStatus.STOPPED),
        (ExperimentState.CANCELED, NNIExperimentStatus.STOPPED),
        (ExperimentState.STOPPING_CANCELED, NNIExperimentStatus.STOPPING),
        (ExperimentState.COMPLETED, NNIExperimentStatus.DONE),
        (ExperimentState.ERROR, NNIExperimentStatus.ERROR),
    ],
)
def test_experiment_states_have_nni_names(state: ExperimentState, nni: NNIExperimentStatus) -> None:
    assert NNIExperimentStatus.of(state) is nni


def test_every_assay_state_has_an_nni_name() -> None:
    for trial in TrialState:
        assert NNITrialStatus.of(trial, early_stopped=False) in NNITrialStatus
    for exp in ExperimentState:
        assert NNIExperimentStatus.of(exp) in NNIExperimentStatus
