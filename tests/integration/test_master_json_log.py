"""``assay master --log-format json``: every line of the master's log is a JSON object with its
time, level, logger and message; a record's figures are fields of it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.cluster import free_port, wait_for

pytestmark = pytest.mark.integration


def test_the_masters_log_is_json_lines(tmp_path: Path) -> None:
    log = tmp_path / "master.log"
    port = free_port()
    with log.open("wb") as out:
        master = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from assay.cli import main; main()",
                "master",
                "--port",
                str(port),
                "--log-format",
                "json",
            ],
            env={**_env(tmp_path)},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for("the master to say where it listens", lambda: "master on" in log.read_text())
    finally:
        master.terminate()
        master.wait(timeout=30)
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert lines, "the master logged nothing"
    for line in lines:
        assert {"time", "level", "logger", "message"} <= set(line), line
    (listening,) = [line for line in lines if line["message"].startswith("master on")]
    assert listening["level"] == "info"
    assert listening["logger"] == "assay.master"
    assert listening["time"].endswith("+00:00")


def _env(tmp_path: Path) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    env["ASSAY_HOME"] = str(tmp_path / "home")
    env["ASSAY_GUARD_WRITERS"] = "1"
    return env
