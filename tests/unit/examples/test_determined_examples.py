"""The Determined examples run outside a cluster as Determined's own scripts do: through
assay's ``determined`` package, with checkpoints in a local directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

from assay.compat import trial_pythonpath
from assay.config import load_experiment_config

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "determined"


def test_the_core_api_example_trains_off_cluster(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    env["PYTHONPATH"] = trial_pythonpath(str(ROOT / "src"))
    env["ASSAY_OFFCLUSTER_LENGTH"] = "15"
    done = subprocess.run(
        [sys.executable, str(EXAMPLE / "core_api.py")],
        cwd=tmp_path,
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "started at step 0 run 1" in done.stdout
    assert "done at step 15" in done.stdout
    assert len(list((tmp_path / "checkpoints").iterdir())) == 2, "at step 10 and at the end"


def test_the_example_configs_are_valid_determined_configs() -> None:
    for name in ("core_api.yaml", "ddp.yaml"):
        config = load_experiment_config(yaml.safe_load((EXAMPLE / name).read_text()))
        assert config.entrypoint
    ddp = yaml.safe_load((EXAMPLE / "ddp.yaml").read_text())
    assert ddp["entrypoint"].startswith("python3 -m determined.launch.torch_distributed")
    assert ddp["resources"]["slots_per_trial"] == 2
