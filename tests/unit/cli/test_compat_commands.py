"""Where ``assay compat install-commands`` puts its wrappers by default, and what they run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from assay.cli._compat import MARKER, default_dir, wrapper_text


def test_default_dir_is_beside_the_running_assay_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "venv-bin" / "assay"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    monkeypatch.setattr(sys, "argv", [str(script), "compat", "install-commands"])
    assert default_dir() == script.parent


def test_default_dir_without_an_assay_command_is_the_interpreters(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "argv", ["-c", "compat"])
    assert default_dir() == Path(sys.executable).parent


def test_wrapper_is_marked_and_runs_the_compat_entry(tmp_path: Path) -> None:
    text = wrapper_text("det")
    assert text.startswith("#!/bin/sh\n") and MARKER in text
    wrapper = tmp_path / "det"
    wrapper.write_text(text)
    wrapper.chmod(0o755)
    # An unmapped command answers without a master: the translation ran, in assay.
    done = subprocess.run(
        [str(wrapper), "agent", "list"], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 1
    assert "`det agent list` has no assay equivalent; the closest: `assay agent`" in done.stderr
