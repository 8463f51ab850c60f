"""``assay -m URL agent`` takes the master from the global option, like every other command."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

NOWHERE = "http://127.0.0.1:9"


def test_global_master_option_is_the_agents_master(tmp_path: Path) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")},
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    home = tmp_path / "home"
    command = "from assay.cli import main; main()"
    args = ["-m", NOWHERE, "agent", "--home", str(home), "--token", "t"]
    proc = subprocess.Popen(
        [sys.executable, "-c", command, *args],
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 30
        seen = []
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                break
            seen.append(line)
            if "unreachable" in line:
                assert NOWHERE in line, line
                return
        raise AssertionError(f"the agent never tried {NOWHERE}: {''.join(seen)}")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
