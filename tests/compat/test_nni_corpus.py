"""Every NNI experiment config of the compat corpus is read into an assay experiment config
that the loader accepts, or refused with the problems written here (each naming the key and
what to use instead).

The corpus keeps each upstream file under its path with ``/`` written ``__``; the tests lay the
files out again under their real paths, so that a config finds its search space file where NNI
would (``searchSpaceFile`` is relative to the config).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.config import (
    InvalidConfig,
    load_experiment_config,
    nni_format,
    parse_yaml,
    read_nni_config,
)
from tests.corpus import compat_dir, missing

NNI = compat_dir() / "nni"
ACCEPTED = "accepted"
NOT_AN_EXPERIMENT = "not an experiment config"
ANNOTATION = ("useAnnotation", "annotations are not supported")

EXPECTED: dict[str, str | list[tuple[str, str]]] = {
    "examples/trials/mnist-nested-search-space/config.yml": ACCEPTED,
    "examples/trials/mnist-nested-search-space/config_windows.yml": ACCEPTED,
    "examples/trials/mnist-pytorch/config.yml": ACCEPTED,
    "examples/trials/mnist-pytorch/config_adl.yml": ACCEPTED,
    "examples/trials/mnist-pytorch/config_aml.yml": ACCEPTED,
    "examples/trials/mnist-pytorch/config_assessor.yml": ACCEPTED,
    "examples/trials/mnist-pytorch/config_detailed.yml": ACCEPTED,
    "examples/trials/mnist-pytorch/config_dlc.yml": ACCEPTED,
    "examples/trials/mnist-pytorch/config_dlc_resource.yml": ACCEPTED,
    "examples/trials/mnist-pytorch/config_frameworkcontroller.yml": [
        ("trialCommand", "trial.taskRoles (roles of NNI's other training services)")
    ],
    "examples/trials/mnist-pytorch/config_frameworkcontroller_custom.yml": [
        ("trialCommand", "required: the command that runs one trial")
    ],
    "examples/trials/mnist-pytorch/config_hybrid.yml": ACCEPTED,
    "examples/trials/mnist-pytorch/config_kubeflow.yml": [
        ("trialCommand", "trial.worker (roles of NNI's other training services)")
    ],
    "examples/trials/mnist-pytorch/config_openpai.yml": ACCEPTED,
    "examples/trials/mnist-pytorch/config_remote.yml": ACCEPTED,
    "examples/trials/mnist-pytorch/config_tensorboard.yml": ACCEPTED,
    "examples/trials/mnist-pytorch/config_windows.yml": ACCEPTED,
    "examples/trials/mnist-pytorch/fc_template.yml": NOT_AN_EXPERIMENT,
    "examples/trials/sklearn/classification/config.yml": ACCEPTED,
    "examples/trials/sklearn/regression/config.yml": ACCEPTED,
    "test/training_service/config/assessors/curvefitting-v2.yml": ACCEPTED,
    "test/training_service/config/assessors/curvefitting.yml": ACCEPTED,
    "test/training_service/config/assessors/medianstop-v2.yml": ACCEPTED,
    "test/training_service/config/assessors/medianstop.yml": ACCEPTED,
    "test/training_service/config/metrics_test/config-v2.yml": ACCEPTED,
    "test/training_service/config/metrics_test/config.yml": ACCEPTED,
    "test/training_service/config/metrics_test/config_dict_metrics-v2.yml": ACCEPTED,
    "test/training_service/config/metrics_test/config_dict_metrics.yml": ACCEPTED,
    "test/training_service/config/metrics_test/config_failure-v2.yml": ACCEPTED,
    "test/training_service/config/metrics_test/config_failure.yml": ACCEPTED,
    # NNI's own test of custom tuners and assessors, over a search space that is not NNI's format.
    "test/training_service/config/naive_test/local.yml": [
        ("searchSpace.x", "must be a map with _type and _value"),
        ("assessor", "custom assessors are not supported: use Medianstop or Curvefitting"),
    ],
    "test/training_service/config/tuners/anneal.yml": [ANNOTATION],
    "test/training_service/config/tuners/batch.yml": ACCEPTED,
    "test/training_service/config/tuners/bohb.yml": ACCEPTED,
    "test/training_service/config/tuners/evolution.yml": [ANNOTATION],
    "test/training_service/config/tuners/gp.yml": ACCEPTED,
    "test/training_service/config/tuners/gridsearch.yml": [
        ("assessor", "cannot be used with the grid searcher")
    ],
    "test/training_service/config/tuners/hyperband.yml": ACCEPTED,
    "test/training_service/config/tuners/metis.yml": ACCEPTED,
    "test/training_service/config/tuners/random.yml": [ANNOTATION],
    "test/training_service/config/tuners/smac.yml": [ANNOTATION],
    "test/training_service/config/tuners/tpe.yml": [ANNOTATION],
    "test/ut/experiment/assets/config.yaml": [
        ("searchSpace.a", "must be a map with _type and _value"),
        ("tuner.className", 'must be module.ClassName, got "Tuner"'),
        ("assessor.name", 'unknown NNI assessor "assess"'),
    ],
    "test/ut/experiment/assets/ss.yaml": NOT_AN_EXPERIMENT,
    "test/ut/experiment/assets/ss_yaml12.yaml": NOT_AN_EXPERIMENT,
    # nnictl's own invalid-config fixtures: each is refused for the mistake it was written with.
    "test/ut/tools/nnictl/config_files/invalid/custom-tuner-1.yml": [
        ("tuner.className", "required for a custom tuner")
    ],
    "test/ut/tools/nnictl/config_files/invalid/custom-tuner-2.yml": [
        ("tuner", "either a builtin tuner name or className, not both")
    ],
    "test/ut/tools/nnictl/config_files/invalid/no-tuner.yml": [("tuner", "required")],
    "test/ut/tools/nnictl/config_files/invalid/searchspace-path.yml": [
        ("searchSpacePath", "cannot read the search space file ./wrong_search_space.json")
    ],
    "test/ut/tools/nnictl/config_files/invalid/tuner-wrong-key.yml": [
        ("tuner.wrongTunerKey", "unknown key; valid keys are: name, className"),
        ("tuner.name", "required: a tuner name"),
    ],
    "test/ut/tools/nnictl/config_files/invalid/wrong-class-args.yml": [
        ("assessor.classArgs.optimize_mode", "must be maximize or minimize")
    ],
    "test/ut/tools/nnictl/config_files/invalid/wrong-training-service.yml": [
        ("trainingServicePlatform", 'unknown training service "local222"')
    ],
    "test/ut/tools/nnictl/config_files/test_files/test_yaml.yml": NOT_AN_EXPERIMENT,
    "test/ut/tools/nnictl/config_files/valid/test.yml": ACCEPTED,
}


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not NNI.is_dir():
        missing(NNI)
    root = tmp_path_factory.mktemp("nni")
    for f in NNI.iterdir():
        target = root / f.name.replace("__", "/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(f.read_bytes())
    return root


def _configs() -> list[str]:
    if not NNI.is_dir():
        return sorted(EXPECTED)
    names = [f.name.replace("__", "/") for f in NNI.iterdir()]
    return sorted(n for n in names if n.endswith((".yml", ".yaml")))


@pytest.mark.parametrize("name", _configs())
def test_nni_corpus_config_is_read_or_refused_as_expected(tree: Path, name: str) -> None:
    assert name in EXPECTED, f"{name} is new in the corpus: write its expected outcome here"
    path = tree / name
    data = parse_yaml(path.read_text(encoding="utf-8"), name)
    expected = EXPECTED[name]
    if expected == NOT_AN_EXPERIMENT:
        assert nni_format(data) is None
        return
    assert nni_format(data) in ("v1", "v2")
    if expected == ACCEPTED:
        raw, notes = read_nni_config(data, path.parent)
        cfg = load_experiment_config(raw)
        assert cfg.entrypoint
        assert all(isinstance(n, str) and n for n in notes)
        return
    with pytest.raises(InvalidConfig) as refused:
        read_nni_config(data, path.parent)
    got = [(d.path, d.message) for d in refused.value.details]
    assert len(got) == len(expected), got
    for (path_got, message), (path_want, words) in zip(got, expected, strict=True):
        assert path_got == path_want, got
        assert words in message, got


def test_nni_corpus_expectations_name_only_files_of_the_corpus(tree: Path) -> None:
    assert set(EXPECTED) == set(_configs())
