"""When every trial failed, ``e create -f`` ends with the failed trial's last lines: those of
one run (its latest), in the order it wrote them, never mixed with an earlier run's."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.cluster import Cluster

pytestmark = pytest.mark.integration

SCRIPT = """\
import os
import sys

marker = os.path.join(os.environ["MARKER_DIR"], "ran-once")
if not os.path.exists(marker):
    open(marker, "w").close()
    for i in range(1, 7):
        print(f"first run, line {i}", flush=True)
    sys.exit(3)
print("second run, line 1", flush=True)
print("second run, line 2", flush=True)
sys.exit(4)
"""


def test_the_failure_summary_shows_the_latest_runs_lines_alone_in_order(
    cluster: Cluster, tmp_path: Path
) -> None:
    root = tmp_path / "fails-twice"
    root.mkdir()
    (root / "train.py").write_text(SCRIPT)
    markers = tmp_path / "markers"
    markers.mkdir()
    config = root / "config.yaml"
    config.write_text(
        "name: fails-twice\n"
        "entrypoint: python3 train.py\n"
        "searcher: {name: single, metric: loss, max_length: {batches: 1}}\n"
        "max_restarts: 1\n"
        f"environment: {{environment_variables: ['MARKER_DIR={markers}']}}\n"
    )
    result = cluster.cli("e", "create", str(config), str(root), "--follow", timeout=180)
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert "ended ERROR" in out, out
    lines = out[out.index("last lines:") :].splitlines()[1:]
    shown = [line.strip() for line in lines if line.startswith("  ")]
    assert shown == ["second run, line 1", "second run, line 2"], out
