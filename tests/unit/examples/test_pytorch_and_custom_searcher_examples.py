"""The PyTorch and custom-searcher examples: their configs are valid, the custom searcher keeps
the searcher contract in its real subprocess, and the PyTorch script trains off-cluster."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from assay.compat import trial_pythonpath
from assay.config import load_experiment_config
from assay.master.kernel._custom_searcher import CustomSearchMethod
from assay.searcher import Create, Searcher
from assay.searcher.testing import check_method

ROOT = Path(__file__).resolve().parents[3]
PYTORCH = ROOT / "examples" / "pytorch"
CUSTOM = ROOT / "examples" / "custom_searcher"


@pytest.mark.parametrize("path", [PYTORCH / "adaptive.yaml", CUSTOM / "config.yaml"])
def test_the_example_config_is_valid(path: Path) -> None:
    config = load_experiment_config(yaml.safe_load(path.read_text()))
    assert config.entrypoint == "python3 train.py"
    assert (path.parent / "train.py").is_file()


def _custom_config() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((CUSTOM / "config.yaml").read_text())
    return loaded


def _method() -> CustomSearchMethod:
    config = _custom_config()
    searcher = config["searcher"]
    return CustomSearchMethod(
        searcher["class"],
        CUSTOM,
        seed=7,
        hyperparameters=config["hyperparameters"],
        class_args=searcher["class_args"],
        settings=searcher,
        timeout=30,
    )


def test_the_custom_searcher_example_passes_the_conformance_kit() -> None:
    methods: list[CustomSearchMethod] = []

    def make() -> Searcher:
        methods.append(_method())
        return Searcher(methods[-1])

    try:
        max_trials = _custom_config()["searcher"]["max_trials"]
        check_method(make, seed=3, max_trials=max_trials, restore_points=1)
    finally:
        for method in methods:
            method.close()


def test_the_custom_searcher_steps_from_the_best_point_inside_the_space() -> None:
    method = _method()
    try:
        searcher = Searcher(method)
        first = [op for op in searcher.initial_operations() if isinstance(op, Create)]
        assert len(first) == 3, "initial_trials from class_args"
        best = first[1]
        for op in first:
            searcher.validation_completed(op.request_id, 0.1 if op is best else 0.9, 20)
        follow = [op for op in searcher.trial_closed(first[0].request_id) if isinstance(op, Create)]
        (new,) = follow
        for name in ("alpha", "eta0"):
            # 0.3 of the way from the best point toward a random one: nearer the best.
            lo, hi = sorted((best.hparams[name], new.hparams[name]))
            assert 10**-6 <= lo <= hi <= 1.0
        assert new.hparams["loss"] in ("log_loss", "hinge", "modified_huber")
    finally:
        method.close()


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_the_pytorch_example_trains_off_cluster(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    env["PYTHONPATH"] = trial_pythonpath(str(ROOT / "src"))
    env["ASSAY_OFFCLUSTER_LENGTH"] = "30"
    done = subprocess.run(
        [sys.executable, str(PYTORCH / "train.py")],
        cwd=tmp_path,
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    assert "training to the searcher's lengths from batch 0" in done.stdout
    assert "validation metrics at step 30" in done.stdout + done.stderr
    assert len(list((tmp_path / "checkpoints").iterdir())) == 1
