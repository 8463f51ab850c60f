"""A master in the foreground stopped with Ctrl-C shuts down and says so in one line, with no
traceback, in either log format."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.integration.cluster import free_port

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_ctrl_c_stops_a_foreground_master_in_one_line(tmp_path: Path, log_format: str) -> None:
    port = free_port()
    env = {**os.environ, "ASSAY_ADMIN_PASSWORD": "a-password-for-the-test"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "assay.api", "--port", str(port), "--home", str(tmp_path),
         "--log-format", log_format],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        # As a terminal's Ctrl-C finds it (a background job of a shell ignores SIGINT); the
        # function only resets one signal's disposition, safe between fork and exec.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # noqa: PLW1509
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/api/v1/master").status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out[-3000:]
    assert "Traceback" not in out
    assert "KeyboardInterrupt" not in out
    lines = out.strip().splitlines()
    assert "master stopped (interrupted)" in lines[-1]
    if log_format == "json":
        for line in lines:
            json.loads(line)  # every line one JSON object, the last one too
