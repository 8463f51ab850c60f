"""The NNI example: its config is read as an NNI v2 config into an experiment assay accepts, and
its trial runs on its own as NNI trials do without a manager."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from assay.compat import trial_pythonpath
from assay.config import (
    load_experiment_config,
    nni_context,
    nni_format,
    parse_yaml,
    read_nni_config,
)

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "nni"


def test_nni_example_config_is_an_nni_v2_experiment() -> None:
    data = parse_yaml((EXAMPLE / "config.yml").read_text(), "config.yml")
    assert nni_format(data) == "v2"
    raw, notes = read_nni_config(data, EXAMPLE)
    cfg = load_experiment_config(raw)
    assert notes == []
    assert set(cfg.hyperparameters) == {"alpha", "penalty", "loss", "rounds"}
    assert raw["searcher"]["name"] == "tpe"
    assert raw["searcher"]["early_stopping"]["name"] == "medianstop"
    assert nni_context(data, EXAMPLE) == EXAMPLE


def test_nni_example_trial_runs_standalone() -> None:
    env = {**os.environ, "PYTHONPATH": trial_pythonpath(os.environ.get("PYTHONPATH"))}
    done = subprocess.run(
        [sys.executable, "main.py"],
        cwd=EXAMPLE,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    final = [line for line in done.stdout.splitlines() if "final result" in line]
    assert len(final) == 1
    assert float(final[0].rsplit(" ", 1)[1]) > 0.8
