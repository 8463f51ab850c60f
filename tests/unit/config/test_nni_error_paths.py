"""Problems with an NNI config name the NNI keys the user wrote, in the user's spelling
(``maxTrialNumber``, ``max_trial_number``, v1's ``maxTrialNum``), never the keys of the assay
config it was read into (``searcher.max_trials``)."""

from __future__ import annotations

from typing import Any

import pytest

from assay.config import InvalidConfig, read_nni_config
from assay.config.nni._paths import NniPaths
from assay.errors import ErrorDetail


def v2(**extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "trialCommand": "python3 trial.py",
        "searchSpace": {"lr": {"_type": "uniform", "_value": [0.1, 0.2]}},
        "tuner": {"name": "TPE", "classArgs": {"optimize_mode": "maximize"}},
        "trialConcurrency": 2,
        "maxTrialNumber": 6,
    }
    base.update(extra)
    return base


def v1(trial: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "trainingServicePlatform": "local",
        "searchSpace": {"x": {"_type": "choice", "_value": [1, 2]}},
        "tuner": {"builtinTunerName": "Random"},
        "trial": {"command": "python3 t.py", "codeDir": ".", "gpuNum": 0, **(trial or {})},
    }
    base.update(extra)
    return base


def problems(data: dict[str, Any]) -> list[str]:
    with pytest.raises(InvalidConfig) as refused:
        read_nni_config(data, ".")
    assert refused.value.message.startswith("invalid NNI config")
    return [str(d) for d in refused.value.details]


HUGE = [-1e308, 1e308]

CASES: list[tuple[str, dict[str, Any], str]] = [
    ("max trials zero", v2(maxTrialNumber=0), "maxTrialNumber: must be >= 1, got 0"),
    ("max trials too many", v2(maxTrialNumber=10**9), "maxTrialNumber: must be <= 1,000,000"),
    ("snake spelling kept", v2(max_trial_number=0, maxTrialNumber=None), "max_trial_number: "),
    ("concurrency too high", v2(trialConcurrency=5000), "trialConcurrency: must be <= 1,000"),
    ("trial duration", v2(maxTrialDuration="soon"), "maxTrialDuration: must be a number"),
    ("experiment duration", v2(maxExperimentDuration=-1), "maxExperimentDuration: must be"),
    ("gpu number negative", v2(trialGpuNumber=-1), "trialGpuNumber: must be >= 0, got -1"),
    ("gpu number text", v2(trialGpuNumber="two"), 'trialGpuNumber: must be an integer, got "two"'),
    ("experiment name", v2(experimentName="n" * 300), "experimentName: must have at most 256"),
    ("command too long", v2(trialCommand="x" * 40_000), "trialCommand: must have at most"),
    (
        "population size",
        v2(tuner={"name": "Evolution", "classArgs": {"population_size": 0}}),
        "tuner.classArgs.population_size: must be >= 1, got 0",
    ),
    (
        "population size camel",
        v2(tuner={"name": "Evolution", "classArgs": {"populationSize": "many"}}),
        "tuner.classArgs.populationSize: must be an integer",
    ),
    (
        "hyperband eta",
        v2(advisor={"name": "Hyperband", "classArgs": {"R": 9, "eta": 1}}),
        "advisor.classArgs.eta: must be > 1, got 1",
    ),
    (
        "pbt fraction",
        v2(tuner={"name": "PBTTuner", "classArgs": {"fraction": 2}}),
        "tuner.classArgs.fraction: must be <= 0.5, got 2",
    ),
    (
        "pbt factor",
        v2(tuner={"name": "PBT", "classArgs": {"factor": -1}}),
        "tuner.classArgs.factor: must be >= 0, got -1",
    ),
    (
        "tuner seed",
        v2(tuner={"name": "TPE", "classArgs": {"seed": "x"}}),
        'tuner.classArgs.seed: must be an integer, got "x"',
    ),
    (
        "tuner seed negative, class_args spelling",
        v2(tuner={"name": "TPE", "class_args": {"seed": -5}}),
        "tuner.class_args.seed: must be >= 0, got -5",
    ),
    (
        "assessor epoch num",
        v2(assessor={"name": "Curvefitting", "classArgs": {"epoch_num": -1}}),
        "assessor.classArgs.epoch_num: must be >= 1, got -1",
    ),
    (
        "assessor start step",
        v2(assessor={"name": "Medianstop", "classArgs": {"start_step": -1}}),
        "assessor.classArgs.start_step: must be >= 0, got -1",
    ),
    (
        "optimize mode",
        v2(tuner={"name": "TPE", "classArgs": {"optimize_mode": "up"}}),
        'tuner.classArgs.optimize_mode: must be maximize or minimize, got "up"',
    ),
    (
        "search space range",
        v2(searchSpace={"lr": {"_type": "uniform", "_value": HUGE}}),
        "searchSpace.lr._value: maxval - minval",
    ),
    (
        "nested search space",
        v2(
            searchSpace={
                "l": {
                    "_type": "choice",
                    "_value": [{"_name": "a"}, {"x": {"_type": "uniform", "_value": HUGE}}],
                }
            }
        ),
        "searchSpace.l._value[1].x._value: ",
    ),
    (
        "normal too wide",
        v2(searchSpace={"x": {"_type": "normal", "_value": [1e308, 1e307]}}),
        "searchSpace.x._value: mu +- 40 * sigma",
    ),
    (
        "grid over a continuous range",
        v2(tuner={"name": "GridSearch"}),
        "searchSpace.lr: GridSearch cannot enumerate a continuous range",
    ),
    ("v1 max trial num", v1(maxTrialNum=0), "maxTrialNum: must be >= 1, got 0"),
    ("v1 max exec duration", v1(maxExecDuration="xx"), "maxExecDuration: must be a number"),
    ("v1 gpu num", v1({"gpuNum": -2}), "trial.gpuNum: must be >= 0, got -2"),
    ("v1 snake gpu num", v1({"gpu_num": -2, "gpuNum": None}), "trial.gpu_num: must be >= 0"),
    (
        "v1 adaptdl checkpoint",
        v1(
            {"image": "img", "checkpoint": {"storageClass": "sc", "storageSize": 5}},
            trainingServicePlatform="adl",
        ),
        "trial.checkpoint.storageSize: must be a string, got 5",
    ),
]


@pytest.mark.parametrize(("data", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_problem_names_the_nni_key_as_written(data: dict[str, Any], expected: str) -> None:
    got = problems({k: v for k, v in data.items() if v is not None})
    assert len(got) == 1, got
    assert got[0].startswith(expected), got
    assert "searcher." not in got[0] and "hyperparameters" not in got[0], got


def test_every_problem_is_renamed_at_once() -> None:
    data = v1(maxTrialNum=0, maxExecDuration="xx", trial={"gpuNum": -2})
    got = [p.split(":")[0] for p in problems(data)]
    assert sorted(got) == ["maxExecDuration", "maxTrialNum", "trial.gpuNum"]


def test_unknown_assay_paths_are_left_as_they_are() -> None:
    paths = NniPaths()
    paths.add("searcher.max_trials", "maxTrialNumber", leaf=True)
    assert paths.user_path("searcher.max_trials") == "maxTrialNumber"
    assert paths.user_path("searcher.max_trials.x") == "maxTrialNumber"
    assert paths.user_path("checkpoint_storage.host_path") == "checkpoint_storage.host_path"


def test_a_section_maps_its_subkeys_and_the_longest_prefix_wins() -> None:
    paths = NniPaths()
    paths.add("searcher", "advisor")
    paths.add("searcher.divisor", "advisor.classArgs.eta", leaf=True)
    assert paths.user_path("searcher.divisor") == "advisor.classArgs.eta"
    assert paths.user_path("searcher.name") == "advisor.name"
    assert paths.user_path("searcher") == "advisor"


def test_search_space_paths_point_at_type_and_value() -> None:
    paths = NniPaths()
    paths.space("search_space")
    assert paths.user_path("hyperparameters") == "search_space"
    assert paths.user_path("hyperparameters.lr") == "search_space.lr"
    assert paths.user_path("hyperparameters.lr.maxval") == "search_space.lr._value"
    assert paths.user_path("hyperparameters.lr.type") == "search_space.lr._type"
    assert (
        paths.user_path("hyperparameters.l.options[2].k.q") == "search_space.l._value[2].k._value"
    )
    detail = paths.detail(
        ErrorDetail("hyperparameters.x", "grid search is in use but count was not provided")
    )
    assert detail.path == "search_space.x"
    assert "count" not in detail.message
