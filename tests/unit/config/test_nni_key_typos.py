"""A mistyped NNI key is refused with the key meant (``maxTrialNumbr`` -> ``maxTrialNumber``),
and v1's ``trial`` block takes only the keys nnictl knows, naming them when one is not."""

from __future__ import annotations

from typing import Any

import pytest

from assay.config import InvalidConfig, read_nni_config
from assay.config.nni._keys import did_you_mean


def v2(**extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "trialCommand": "python3 trial.py",
        "searchSpace": {"lr": {"_type": "uniform", "_value": [0.1, 0.2]}},
        "tuner": {"name": "TPE"},
    }
    base.update(extra)
    return base


def v1(**trial: Any) -> dict[str, Any]:
    return {
        "trainingServicePlatform": "local",
        "searchSpace": {"x": {"_type": "choice", "_value": [1, 2]}},
        "tuner": {"builtinTunerName": "Random"},
        "trial": {"command": "python3 t.py", "codeDir": ".", **trial},
    }


def problems(data: dict[str, Any]) -> list[str]:
    with pytest.raises(InvalidConfig) as refused:
        read_nni_config(data, ".")
    return [str(d) for d in refused.value.details]


@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("maxTrialNumbr", "maxTrialNumber"),
        ("trialConcurency", "trialConcurrency"),
        ("search_space_fil", "searchSpaceFile"),
        ("max_experiment_duraton", "maxExperimentDuration"),
        ("trainingServis", "trainingService"),
        ("assesor", "assessor"),
    ],
)
def test_a_mistyped_top_level_key_is_refused_with_the_key_meant(typo: str, meant: str) -> None:
    assert problems(v2(**{typo: 1})) == [f"{typo}: unknown NNI config key (did you mean {meant}?)"]


def test_a_key_like_no_other_points_at_the_reference() -> None:
    assert problems(v2(wibble=1)) == [
        "wibble: unknown NNI config key; see NNI's experiment config reference"
    ]


def test_a_mistyped_tuner_key_is_not_silently_dropped() -> None:
    got = problems(v2(tuner={"name": "TPE", "clasArgs": {"optimize_mode": "minimize"}}))
    assert got == ["tuner.clasArgs: unknown key (did you mean classArgs?)"]


def test_a_mistyped_assessor_key_is_refused() -> None:
    got = problems(v2(assessor={"builtinAssessorNam": "Medianstop"}))
    assert got[0] == "assessor.builtinAssessorNam: unknown key (did you mean builtinAssessorName?)"


def test_an_unknown_v1_trial_key_is_refused_naming_the_valid_keys() -> None:
    got = problems(v1(wibble=3))
    assert len(got) == 1
    assert got[0].startswith("trial.wibble: unknown key; valid keys are: command, codeDir, gpuNum")


def test_a_mistyped_v1_trial_key_is_refused_with_the_key_meant() -> None:
    assert problems(v1(gpuNumber=1)) == ["trial.gpuNumber: unknown key (did you mean gpuNum?)"]
    assert problems(v1(code_dirr=".")) == ["trial.code_dirr: unknown key (did you mean codeDir?)"]


def test_known_v1_trial_keys_of_other_services_are_accepted() -> None:
    raw, notes = read_nni_config(v1(cpuNum=2, memoryMB=1024, image="img", gpu_num=0), ".")
    assert raw["entrypoint"] == "python3 t.py"
    assert "trial.cpuNum" in notes[0] and "trial.memoryMB" in notes[0]


def test_did_you_mean_compares_as_nni_does() -> None:
    assert did_you_mean("MAX_TRIAL_NUM", ["maxTrialNum", "maxTrialNumber"]) == "maxTrialNum"
    assert did_you_mean("zzz", ["maxTrialNum"]) is None
