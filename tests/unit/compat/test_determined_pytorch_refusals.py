"""A trial whose Python has no torch is told so in one line when it imports
``determined.pytorch``, and Determined's Trial APIs assay does not run say so in one line."""

from __future__ import annotations

import os
import subprocess
import sys

from assay.compat import SHIMS_DIR
from assay.protocol import FAILURE_PREFIX

# Makes torch unimportable in the child, as in a Python that does not have it.
NO_TORCH = (
    "import sys\n"
    "class NoTorch:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name == 'torch' or name.startswith('torch.'):\n"
    "            raise ModuleNotFoundError(f'No module named {name!r}')\n"
    "sys.meta_path.insert(0, NoTorch())\n"
)


def run_child(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{SHIMS_DIR}:{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_determined_pytorch_without_torch_says_so_in_one_line() -> None:
    done = run_child(NO_TORCH + "from determined import pytorch\n")
    assert done.returncode == 1
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith(FAILURE_PREFIX)]
    assert len(lines) == 1, done.stderr
    assert "determined.pytorch needs PyTorch" in lines[0] and "pip install torch" in lines[0]
    assert "Traceback" not in done.stderr


def test_the_legacy_harness_outside_a_cluster_says_so_in_one_line() -> None:
    done = run_child(
        "import runpy, sys\nsys.argv = ['harness', 'model_def:MyTrial']\n"
        "runpy.run_module('determined.exec.harness', run_name='__main__')\n"
    )
    assert done.returncode == 1
    assert "trains model_def:MyTrial on a cluster only" in done.stderr
    assert "Traceback" not in done.stderr
