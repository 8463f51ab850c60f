"""The NNI config reader: formats, keys, search-space types with NNI's semantics, tuners and
assessors, notes for keys of other platforms, and refusals."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from assay.config import (
    InvalidConfig,
    load_experiment_config,
    nni_context,
    nni_format,
    parse_hyperparameters,
    read_nni_config,
)
from assay.searcher import sample


def v2(**extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "trialCommand": "python3 trial.py",
        "searchSpace": {"lr": {"_type": "uniform", "_value": [0.1, 0.2]}},
        "tuner": {"name": "TPE", "classArgs": {"optimize_mode": "maximize"}},
        "trialConcurrency": 2,
        "maxTrialNumber": 6,
        "trainingService": {"platform": "local"},
    }
    base.update(extra)
    return base


def read(data: dict[str, Any], base: Path | str = ".") -> tuple[dict[str, Any], list[str]]:
    raw, notes = read_nni_config(data, base)
    load_experiment_config(raw)  # whatever the reader accepts, the loader accepts
    return raw, notes


def refusal(data: dict[str, Any], base: Path | str = ".") -> list[str]:
    with pytest.raises(InvalidConfig) as refused:
        read_nni_config(data, base)
    return [str(d) for d in refused.value.details]


def draws(nni_space: dict[str, Any], n: int = 2000) -> list[dict[str, Any]]:
    raw, _ = read(v2(searchSpace=nni_space))
    space = parse_hyperparameters(raw["hyperparameters"])
    rng = random.Random(7)
    return [sample(space, rng) for _ in range(n)]


# -- format and keys ------------------------------------------------------------------------------


def test_format_is_told_by_the_keys() -> None:
    assert nni_format(v2()) == "v2"
    assert nni_format({"trial": {"command": "x"}, "trainingServicePlatform": "local"}) == "v1"
    assert nni_format({"entrypoint": "x", "searcher": {}}) is None
    assert nni_format({"a": 1}) is None
    assert nni_format([1]) is None


def test_keys_match_ignoring_case_and_underscores() -> None:
    data = {
        "trial_command": "python3 t.py",
        "SearchSpace": {"x": {"_type": "choice", "_value": [1, 2]}},
        "TUNER": {"name": "Random"},
        "trial_concurrency": 3,
        "max_trial_number": 4,
        "max_experiment_duration": "1h",
        "MaxTrialDuration": "30m",
        "trial_gpu_number": 2,
    }
    raw, _ = read(data)
    assert raw["entrypoint"] == "python3 t.py"
    assert raw["searcher"]["name"] == "random"
    assert raw["searcher"]["max_concurrent_trials"] == 3
    assert raw["searcher"]["max_trials"] == 4
    cfg = load_experiment_config(raw)
    assert cfg.max_duration == 3600
    assert cfg.max_trial_duration == 1800
    assert cfg.resources.slots_per_trial == 2


def test_v1_config_maps_onto_the_same_experiment(tmp_path: Path) -> None:
    (tmp_path / "code").mkdir()
    (tmp_path / "space.yml").write_text("x:\n  _type: randint\n  _value: [0, 3]\n")
    data = {
        "authorName": "me",
        "experimentName": "old",
        "trialConcurrency": 1,
        "maxExecDuration": "2h",
        "maxTrialNum": 5,
        "trainingServicePlatform": "local",
        "searchSpacePath": "space.yml",
        "useAnnotation": False,
        "tuner": {"builtinTunerName": "Anneal", "classArgs": {"optimize_mode": "minimize"}},
        "assessor": {"builtinAssessorName": "Medianstop", "classArgs": {"start_step": 2}},
        "trial": {"command": "python3 t.py", "codeDir": "code", "gpuNum": 0},
    }
    raw, notes = read(data, tmp_path)
    assert raw["name"] == "old"
    assert raw["entrypoint"] == "python3 t.py"
    assert raw["hyperparameters"] == {"x": {"type": "int", "minval": 0, "maxval": 2}}
    assert raw["searcher"]["name"] == "anneal"
    assert raw["searcher"]["smaller_is_better"] is True
    assert raw["searcher"]["early_stopping"] == {"name": "medianstop", "start_step": 2}
    assert raw["max_duration"] == "2h"
    assert nni_context(data, tmp_path) == (tmp_path / "code").resolve()
    assert notes == []


def test_search_space_file_json_relative_to_the_config(tmp_path: Path) -> None:
    (tmp_path / "ss.json").write_text(json.dumps({"b": {"_type": "choice", "_value": [8, 16]}}))
    data = v2(searchSpaceFile="ss.json")
    del data["searchSpace"]
    raw, _ = read(data, tmp_path)
    assert raw["hyperparameters"] == {"b": {"type": "choice", "options": [8, 16]}}


def test_context_is_the_trial_code_directory(tmp_path: Path) -> None:
    assert nni_context(v2(trialCodeDirectory="src"), tmp_path) == (tmp_path / "src").resolve()
    assert nni_context(v2(), tmp_path) == tmp_path.resolve()


# -- search space ---------------------------------------------------------------------------------


def test_randint_excludes_its_upper_end() -> None:
    values = {d["n"] for d in draws({"n": {"_type": "randint", "_value": [2, 5]}})}
    assert values == {2, 3, 4}


def test_uniform_and_quniform_round_and_clip_as_nni() -> None:
    got = [d["x"] for d in draws({"x": {"_type": "quniform", "_value": [0.3, 2.9, 1]}})]
    # clip(round(x / q) * q, low, high): 0 and 3 are clipped to 0.3 and 2.9.
    assert set(got) == {0.3, 1.0, 2.0, 2.9}
    plain = [d["x"] for d in draws({"x": {"_type": "uniform", "_value": [-1, 1]}})]
    assert all(-1 <= v <= 1 for v in plain)


def test_loguniform_and_qloguniform_stay_in_range() -> None:
    got = [d["x"] for d in draws({"x": {"_type": "loguniform", "_value": [1e-4, 1e-1]}})]
    assert all(1e-4 * (1 - 1e-9) <= v <= 1e-1 * (1 + 1e-9) for v in got)
    # Log-uniform: about a third of the draws in each decade.
    assert 0.25 < sum(v < 1e-3 for v in got) / len(got) < 0.42
    q = [d["x"] for d in draws({"x": {"_type": "qloguniform", "_value": [1, 1000, 10]}})]
    assert all(v in {1, 1000} or math.isclose(v % 10, 0, abs_tol=1e-9) for v in q)


def test_normal_family_keeps_mu_sigma_and_q() -> None:
    raw, _ = read(
        v2(
            searchSpace={
                "a": {"_type": "normal", "_value": [0, 1]},
                "b": {"_type": "qnormal", "_value": [5, 2, 0.5]},
                "c": {"_type": "lognormal", "_value": [0, 1]},
                "d": {"_type": "qlognormal", "_value": [1, 0.5, 2]},
            }
        )
    )
    hp = raw["hyperparameters"]
    assert hp["a"] == {"type": "normal", "mu": 0.0, "sigma": 1.0}
    assert hp["b"] == {"type": "normal", "mu": 5.0, "sigma": 2.0, "q": 0.5}
    assert hp["c"] == {"type": "lognormal", "mu": 0.0, "sigma": 1.0}
    assert hp["d"] == {"type": "lognormal", "mu": 1.0, "sigma": 0.5, "q": 2.0}
    got = draws({"c": {"_type": "lognormal", "_value": [0, 1]}})
    assert all(d["c"] > 0 for d in got)


def test_nested_choice_gives_the_option_with_its_name_and_values() -> None:
    space = {
        "layer": {
            "_type": "choice",
            "_value": [
                {"_name": "Empty"},
                {"_name": "Conv", "kernel": {"_type": "choice", "_value": [3, 5]}},
            ],
        }
    }
    seen = {json.dumps(d["layer"], sort_keys=True) for d in draws(space, 400)}
    assert seen == {
        '{"_name": "Empty"}',
        '{"_name": "Conv", "kernel": 3}',
        '{"_name": "Conv", "kernel": 5}',
    }


def test_bad_search_space_entries_are_refused_with_their_path() -> None:
    problems = refusal(
        v2(
            searchSpace={
                "a": {"_type": "randint", "_value": [5, 5]},
                "b": {"_type": "gaussian", "_value": [0, 1]},
                "c": {"_type": "loguniform", "_value": [0, 1]},
                "d": [1, 2],
                "e": {"_type": "layer_choice", "_value": [1]},
            }
        )
    )
    assert problems[0].startswith("searchSpace.a._value: randint needs integers [low, high)")
    assert problems[1].startswith('searchSpace.b._type: unknown NNI type "gaussian"')
    assert problems[2].startswith("searchSpace.c._value: loguniform needs low > 0")
    assert problems[3].startswith("searchSpace.d: must be a map with _type and _value")
    assert problems[4].startswith("searchSpace.e._type: NNI's classic NAS layer choices")


# -- tuners and assessors -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tuner", "name"),
    [
        ({"name": "TPE"}, "tpe"),
        ({"name": "Random"}, "random"),
        ({"name": "Anneal"}, "anneal"),
        ({"name": "GPTuner"}, "gp"),
        ({"name": "Evolution", "classArgs": {"population_size": 4}}, "evolution"),
        ({"name": "GridSearch"}, "grid"),
    ],
)
def test_builtin_tuners_map_onto_searchers(tuner: dict[str, Any], name: str) -> None:
    space = {"x": {"_type": "choice", "_value": [1, 2, 3]}}
    raw, notes = read(v2(tuner=tuner, searchSpace=space))
    assert raw["searcher"]["name"] == name
    assert raw["searcher"]["metric"] == "default"
    assert notes == []


@pytest.mark.parametrize(("tuner", "name"), [("SMAC", "tpe"), ("MetisTuner", "gp"), ("DNGO", "gp")])
def test_tuners_without_their_own_searcher_run_as_the_nearest_and_say_so(
    tuner: str, name: str
) -> None:
    raw, notes = read(v2(tuner={"name": tuner}))
    assert raw["searcher"]["name"] == name
    assert len(notes) == 1
    assert tuner in notes[0]
    assert name.upper() in notes[0]


def test_optimize_mode_sets_the_direction() -> None:
    up, _ = read(v2(tuner={"name": "TPE", "classArgs": {"optimize_mode": "maximize"}}))
    down, _ = read(v2(tuner={"name": "TPE", "classArgs": {"optimize_mode": "minimize"}}))
    assert up["searcher"]["smaller_is_better"] is False
    assert down["searcher"]["smaller_is_better"] is True
    problems = refusal(v2(tuner={"name": "TPE", "classArgs": {"optimize_mode": "up"}}))
    assert problems == ['tuner.classArgs.optimize_mode: must be maximize or minimize, got "up"']


def test_hyperband_and_bohb_advisors() -> None:
    hb, _ = read(v2(advisor={"name": "Hyperband", "classArgs": {"R": 27, "eta": 3}}))
    assert hb["searcher"]["name"] == "hyperband"
    assert hb["searcher"]["max_length"] == 27
    assert hb["searcher"]["divisor"] == 3
    assert "sampler" not in hb["searcher"]
    bohb, _ = read(v2(advisor={"name": "BOHB", "classArgs": {"max_budget": 9, "eta": 3}}))
    assert bohb["searcher"]["sampler"] == {"name": "tpe"}
    assert bohb["searcher"]["max_length"] == 9


def test_batch_tuner_runs_the_points_of_its_choice() -> None:
    space = {
        "combine_params": {
            "_type": "choice",
            "_value": [{"lr": 0.1, "units": 8}, {"lr": 0.01, "units": 16}],
        }
    }
    raw, _ = read(v2(tuner={"name": "BatchTuner"}, searchSpace=space))
    assert raw["searcher"]["name"] == "batch"
    assert raw["searcher"]["points"] == [{"lr": 0.1, "units": 8}, {"lr": 0.01, "units": 16}]


@pytest.mark.parametrize("name", ["PBT", "PBTTuner"])
def test_pbt_runs_rounds_of_its_population(name: str) -> None:
    tuner = {"name": name, "classArgs": {"population_size": 3, "factor": 0.3}}
    raw, _ = read(v2(tuner=tuner, maxTrialNumber=12))
    searcher = raw["searcher"]
    assert searcher["name"] == "pbt"
    assert searcher["population_size"] == 3
    assert searcher["num_rounds"] == 4
    assert searcher["explore_function"]["perturb_factor"] == 0.3


def test_assessors_become_early_stopping() -> None:
    median, _ = read(v2(assessor={"name": "Medianstop", "classArgs": {"start_step": 3}}))
    assert median["searcher"]["early_stopping"] == {"name": "medianstop", "start_step": 3}
    curve, _ = read(
        v2(assessor={"name": "Curvefitting", "classArgs": {"epoch_num": 20, "threshold": 0.9}})
    )
    assert curve["searcher"]["early_stopping"] == {
        "name": "curvefitting",
        "epoch_num": 20,
        "threshold": 0.9,
    }


def test_custom_tuner_runs_as_the_custom_searcher(tmp_path: Path) -> None:
    data = v2(tuner={"className": "my_tuner.MyTuner", "codeDirectory": "."})
    del data["maxTrialNumber"]
    data["trialConcurrency"] = 1
    raw, _ = read(data, tmp_path)
    assert raw["searcher"] == {
        "name": "custom",
        "metric": "default",
        "smaller_is_better": False,
        "class": "my_tuner:MyTuner",
        "class_args": {},
        "max_concurrent_trials": 1,
    }


def test_custom_tuner_gets_its_class_args_and_the_trial_budget(tmp_path: Path) -> None:
    args = {"optimize_mode": "minimize", "start": 3, "names": ["a", "b"]}
    data = v2(tuner={"className": "t.T", "codeDirectory": ".", "classArgs": args})
    raw, _ = read(data, tmp_path)
    searcher = raw["searcher"]
    assert searcher["class_args"] == args
    assert searcher["smaller_is_better"] is True
    assert (searcher["max_trials"], searcher["max_concurrent_trials"]) == (6, 2)
    assert refusal(v2(tuner={"className": "t.T", "classArgs": [1]}), tmp_path) == [
        "tuner.classArgs: must be a map of the tuner's constructor arguments, got [1]"
    ]
    assert refusal(v2(tuner={"className": "t.T"}, maxTrialNumber=0), tmp_path) == [
        "maxTrialNumber: must be >= 1, got 0"
    ]


def test_custom_tuner_outside_the_code_directory_is_refused(tmp_path: Path) -> None:
    data = v2(tuner={"className": "t.T", "codeDirectory": "../elsewhere"}, trialConcurrency=1)
    del data["maxTrialNumber"]
    assert refusal(data, tmp_path) == [
        "tuner.codeDirectory: a custom tuner must be in the trial code directory (the "
        "experiment's context)"
    ]


# -- notes and refusals ---------------------------------------------------------------------------


def test_keys_of_other_platforms_are_named_in_one_note() -> None:
    raw, notes = read(
        v2(
            nniManagerIp="10.0.0.1",
            trainingService={"platform": "remote", "machineList": [{"host": "h"}]},
        )
    )
    assert len(notes) == 1
    for key in ("nniManagerIp", "trainingService.machineList", "trainingService.platform (remote)"):
        assert key in notes[0]
    assert raw["entrypoint"] == "python3 trial.py"


def test_adl_platform_fills_the_adaptdl_section() -> None:
    data = {
        "trainingServicePlatform": "adl",
        "searchSpacePath": "x",
        "tuner": {"builtinTunerName": "TPE"},
        "trial": {
            "command": "python3 t.py",
            "image": "img:1",
            "checkpoint": {"storageClass": "sc", "storageSize": "1Gi"},
        },
    }
    data["searchSpace"] = {"x": {"_type": "choice", "_value": [1]}}
    del data["searchSpacePath"]
    raw, notes = read(data)
    assert raw["adaptdl"] == {
        "image": "img:1",
        "checkpoint": {"storage_class": "sc", "storage_size": "1Gi"},
    }
    assert notes == []


def test_unsupported_features_are_refused_naming_the_key() -> None:
    assert refusal(v2(useAnnotation=True))[0].startswith(
        "useAnnotation: NNI annotations are not supported"
    )
    assert refusal(v2(multiPhase=True))[0].startswith(
        "multiPhase: multi-phase trials are not supported"
    )
    assert refusal(v2(wibble=1)) == [
        "wibble: unknown NNI config key; see NNI's experiment config reference"
    ]
    assert refusal(v2(trainingService={"platform": "moon"}))[0].startswith(
        'trainingService.platform: unknown training service "moon"'
    )
    assert refusal(v2(tuner={"name": "Oracle"}))[0].startswith("tuner.name: unknown NNI tuner")
    assert refusal(v2(assessor={"name": "Gut"}))[0].startswith(
        "assessor.name: unknown NNI assessor"
    )
    data = v2()
    del data["trialCommand"]
    assert refusal(data) == ["trialCommand: required: the command that runs one trial"]


def test_local_service_settings_and_other_trial_keys_are_noted_not_dropped() -> None:
    data = v2(trainingService={"platform": "local", "gpuIndices": "0,1", "useActiveGpu": True})
    _, notes = read(data)
    assert len(notes) == 1
    assert "trainingService.gpuIndices" in notes[0]
    assert "trainingService.useActiveGpu" in notes[0]
    v1 = {
        "trainingServicePlatform": "local",
        "searchSpace": {"x": {"_type": "choice", "_value": [1]}},
        "tuner": {"builtinTunerName": "Random"},
        "trial": {"command": "python3 t.py", "cpuNum": 2, "image": "img"},
    }
    _, notes = read(v1)
    assert len(notes) == 1
    assert "trial.cpuNum" in notes[0]
    assert "trial.image" in notes[0]


def test_adaptdl_v1_trial_block_becomes_the_adaptdl_section(tmp_path: Path) -> None:
    (tmp_path / "space.json").write_text(json.dumps({"lr": {"_type": "uniform", "_value": [0, 1]}}))
    data = {
        "experimentName": "adl",
        "trialConcurrency": 1,
        "maxExecDuration": "2h",
        "maxTrialNum": 4,
        "nniManagerIp": "10.9.8.7",
        "trainingServicePlatform": "adl",
        "searchSpacePath": "space.json",
        "useAnnotation": False,
        "tuner": {"builtinTunerName": "TPE", "classArgs": {"optimize_mode": "minimize"}},
        "trial": {
            "command": "python3 train.py",
            "codeDir": ".",
            "gpuNum": 1,
            "image": "registry.example/train:1",
            "imagePullSecrets": [{"name": "pull"}],
            "adaptive": True,
            "checkpoint": {"storageClass": "fast", "storageSize": "2Gi"},
        },
    }
    raw, notes = read(data, tmp_path)
    cfg = load_experiment_config(raw)
    assert cfg.adaptdl is not None
    assert cfg.adaptdl.image == "registry.example/train:1"
    assert [s.name for s in cfg.adaptdl.image_pull_secrets] == ["pull"]
    assert cfg.adaptdl.adaptive is True
    assert cfg.adaptdl.checkpoint is not None
    assert cfg.adaptdl.checkpoint.storage_size == "2Gi"
    assert cfg.resources.slots_per_trial == 1
    assert cfg.max_duration == 7200
    assert len(notes) == 1
    assert "nniManagerIp" in notes[0]
    assert "trial." not in notes[0]


def test_adaptdl_nfs_is_refused_at_the_nni_key_written(tmp_path: Path) -> None:
    data = {
        "trainingServicePlatform": "adl",
        "searchSpace": {"x": {"_type": "choice", "_value": [1]}},
        "tuner": {"builtinTunerName": "Random"},
        "trial": {
            "command": "python3 t.py",
            "image": "img",
            "nfs": {"server": "10.0.0.5", "path": "/export", "containerMountPath": "/data"},
        },
    }
    [problem] = refusal(data, tmp_path)
    assert problem.startswith("trial.nfs: AdaptDL mounts the NFS export 10.0.0.5:/export")
    assert "mount it at /data on every agent's host and remove nfs" in problem


def test_class_args_no_searcher_honours_are_noted() -> None:
    tuner = {"name": "GPTuner", "classArgs": {"optimize_mode": "maximize", "kappa": 5.0}}
    _, notes = read(v2(tuner=tuner))
    assert notes == [
        "tuner.classArgs accepted but not used (assay's searcher has its own settings): kappa"
    ]
    advisor = {"name": "BOHB", "classArgs": {"max_budget": 9, "min_budget": 1, "eta": 3}}
    _, notes = read(v2(advisor=advisor))
    assert len(notes) == 1
    assert notes[0].endswith(": min_budget")


def test_a_tuner_seed_seeds_the_experiment() -> None:
    raw, notes = read(v2(tuner={"name": "TPE", "classArgs": {"seed": 11}}))
    assert raw["reproducibility"] == {"experiment_seed": 11}
    assert "sampler_options" not in raw["searcher"]
    assert notes == []


def test_invalid_json_search_space_file_names_line_and_column(tmp_path: Path) -> None:
    (tmp_path / "ss.json").write_text('{\n  "lr": {"_type": "uniform", "_value": [0, 1],}\n}\n')
    data = v2(searchSpaceFile="ss.json")
    del data["searchSpace"]
    got = refusal(data, tmp_path)
    assert len(got) == 1
    assert got[0].startswith("searchSpaceFile: ss.json is not valid JSON at line 2, column ")
    assert "Expecting" in got[0]


def test_a_search_space_file_that_is_not_utf8_is_refused_naming_its_first_bad_byte(
    tmp_path: Path,
) -> None:
    (tmp_path / "space.json").write_bytes(b"\x00\xff{{{")
    data = v2(searchSpaceFile="space.json")
    del data["searchSpace"]
    got = refusal(data, tmp_path)
    assert got == [
        "searchSpaceFile: the search space file space.json is not UTF-8 text: byte 0xff at "
        "offset 1 (line 1, column 2) is not UTF-8; save the file as UTF-8"
    ]


def test_invalid_yaml_search_space_file_gives_the_yaml_message(tmp_path: Path) -> None:
    (tmp_path / "ss.yml").write_text("lr: [unclosed\n")
    data = v2(search_space_file="ss.yml")
    del data["searchSpace"]
    got = refusal(data, tmp_path)
    assert len(got) == 1
    assert got[0].startswith("search_space_file: invalid YAML in ss.yml")
    assert "Traceback" not in got[0]
