"""``import nni`` outside an experiment behaves as NNI's package does without a manager, and
``nni.utils.merge_parameter`` merges as NNI's does."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from assay.compat import SHIMS_DIR, trial_pythonpath

SCRIPT = """\
import nni
print(nni.get_next_parameter(), nni.get_trial_id(), nni.get_experiment_id(), nni.get_sequence_id())
nni.report_intermediate_result(0.5)
nni.report_intermediate_result({"default": 0.25, "loss": 1.5})
nni.report_final_result(0.125)
"""


def run_nni(script: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("NNI_", "ASSAY_"))}
    clean["PYTHONPATH"] = trial_pythonpath(os.environ.get("PYTHONPATH"))
    return subprocess.run(
        [sys.executable, "-c", script],
        env={**clean, **env},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_standalone_trial_gets_no_parameters_and_prints_its_results(tmp_path: Path) -> None:
    result = run_nni(SCRIPT, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "{} STANDALONE STANDALONE 0",
        "[nni] intermediate result: 0.5 (index 0)",
        "[nni] intermediate result: {'default': 0.25, 'loss': 1.5} (index 1)",
        "[nni] final result: 0.125",
    ]


def test_nni_local_platform_files_and_ids_are_read(tmp_path: Path) -> None:
    sys_dir = tmp_path / "trial"
    sys_dir.mkdir()
    cfg = {"parameter_id": 3, "parameters": {"lr": 0.01, "conv": {"_name": "a"}}}
    (sys_dir / "parameter.cfg").write_text(json.dumps(cfg) + "\n")
    result = run_nni(
        SCRIPT,
        tmp_path,
        NNI_SYS_DIR=str(sys_dir),
        NNI_EXP_ID="GkqLb3sD",
        NNI_TRIAL_JOB_ID="Xy9Zt",
        NNI_TRIAL_SEQ_ID="4",
    )
    assert result.returncode == 0, result.stderr
    first = result.stdout.splitlines()[0]
    assert first == "{'lr': 0.01, 'conv': {'_name': 'a'}} Xy9Zt GkqLb3sD 4"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ("nni.report_final_result({'loss': 1.0})", "needs a 'default' key"),
        ("nni.report_intermediate_result('high')", "must be a number"),
    ],
)
def test_a_malformed_result_is_refused_naming_what_is_wrong(
    tmp_path: Path, call: str, message: str
) -> None:
    result = run_nni(f"import nni\n{call}\n", tmp_path)
    assert result.returncode != 0
    assert message in result.stderr


def test_the_nni_package_is_in_the_shims_directory() -> None:
    assert (SHIMS_DIR / "nni" / "__init__.py").is_file()


def test_merge_parameter_updates_namespaces_and_dicts_keeping_types() -> None:
    from assay.compat.shims.nni.utils import merge_parameter  # type: ignore[import-not-found]

    ns = argparse.Namespace(lr=0.1, epochs=3, name="a", opt=None)
    merged = merge_parameter(ns, {"lr": 1, "epochs": 5, "opt": "sgd"})
    assert merged is ns and ns.lr == 1.0 and isinstance(ns.lr, float) and ns.epochs == 5
    assert ns.opt == "sgd"
    assert merge_parameter({"a": 1.5}, {"a": 2}) == {"a": 2.0}
    assert merge_parameter({"a": 1}, None) == {"a": 1}
    with pytest.raises(ValueError, match="Key 'b' not found"):
        merge_parameter({"a": 1}, {"b": 2})
    with pytest.raises(ValueError, match="to have type int, but found str"):
        merge_parameter({"a": 1}, {"a": "x"})
