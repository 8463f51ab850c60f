"""NNI configs refused by the command line before it talks to any master: the problem named
with its key, never a traceback."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.unit.cli.test_cli_refusals import assay


def nni_config(tmp_path: Path, **extra: object) -> Path:
    data = {
        "trialCommand": "python3 t.py",
        "searchSpace": {"x": {"_type": "randint", "_value": [1, 4]}},
        "tuner": {"name": "TPE"},
        **extra,
    }
    path = tmp_path / "config.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def refusal(done: object) -> list[str]:
    assert getattr(done, "returncode", None) == 1
    stderr = str(getattr(done, "stderr", ""))
    assert "Traceback" not in stderr
    return stderr.strip().splitlines()


def test_experiment_create_refuses_an_nni_annotation_config_naming_the_key(
    tmp_path: Path,
) -> None:
    path = nni_config(tmp_path, useAnnotation=True)
    lines = refusal(assay(tmp_path, "experiment", "create", str(path)))
    assert lines[0] == "error: invalid NNI config: 1 problem"
    assert lines[1].strip().startswith("useAnnotation: NNI annotations are not supported")
    assert len(lines) == 2


def test_nni_create_refuses_an_unknown_tuner(tmp_path: Path) -> None:
    path = nni_config(tmp_path, tuner={"name": "Oracle"})
    lines = refusal(assay(tmp_path, "nni", "create", "--config", str(path)))
    assert lines[1].strip().startswith('tuner.name: unknown NNI tuner "Oracle"')


def test_nni_create_refuses_a_config_that_is_not_nni(tmp_path: Path) -> None:
    path = tmp_path / "exp.yml"
    path.write_text("entrypoint: python3 t.py\nsearcher: {name: single, metric: loss}\n")
    lines = refusal(assay(tmp_path, "nni", "create", "--config", str(path)))
    assert lines == [f"error: {path} is not an NNI config: create it with assay experiment create"]


def test_nni_export_refuses_an_unknown_type(tmp_path: Path) -> None:
    done = assay(tmp_path, "nni", "experiment", "export", "1", "--type", "xml", "-f", "out")
    assert refusal(done) == ["error: --type must be csv or json, got 'xml'"]


def test_nni_create_without_config_says_config_is_required_in_one_line(tmp_path: Path) -> None:
    lines = refusal(assay(tmp_path, "nni", "create"))
    assert lines == ["error: --config is required: assay nni create --config config.yml"]
