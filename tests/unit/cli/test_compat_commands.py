"""Where ``assay compat install-commands`` puts its wrappers by default, and what they run."""

from __future__ import annotations

import os
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
        [str(wrapper), "agent", "enable", "x"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 1
    assert "`det agent enable` has no assay equivalent; the closest: `assay agent`" in done.stderr


def test_shims_path_runs_an_nni_trial_script_standalone(tmp_path: Path) -> None:
    found = subprocess.run(
        [sys.executable, "-c", "from assay.cli import main; main()", "compat", "shims-path"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert found.returncode == 0, found.stderr
    shims = found.stdout.strip()
    assert found.stdout == shims + "\n"  # one line, nothing wrapped: it goes on PYTHONPATH
    assert (Path(shims) / "nni" / "__init__.py").is_file()
    assert (Path(shims) / "determined" / "__init__.py").is_file()
    script = tmp_path / "main.py"
    script.write_text(
        "import nni\n"
        "print(nni.get_next_parameter())\n"
        "nni.report_intermediate_result(0.5)\n"
        "nni.report_final_result(0.75)\n"
    )
    # Only the shims on the path, as `PYTHONPATH=$(assay compat shims-path) python3 main.py`;
    # none of assay's trial variables, so the script is standalone.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NNI_", "ASSAY_"))}
    env["PYTHONPATH"] = shims
    ran = subprocess.run(
        [sys.executable, str(script)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == [
        "{}",
        "[nni] intermediate result: 0.5 (index 0)",
        "[nni] final result: 0.75",
    ]


def test_install_commands_creates_a_missing_dir_and_its_parents_0755(tmp_path: Path) -> None:
    where = tmp_path / "new" / "bin"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    code = "from assay.cli import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", code, "compat", "install-commands", "--dir", str(where)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    for d in (where, where.parent):
        assert d.stat().st_mode & 0o777 == 0o755
    assert MARKER in (where / "det").read_text()
    assert MARKER in (where / "nnictl").read_text()


def test_install_commands_refuses_a_dir_that_is_a_file(tmp_path: Path) -> None:
    where = tmp_path / "file"
    where.write_text("")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    code = "from assay.cli import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", code, "compat", "install-commands", "--dir", str(where / "bin")],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env=env,
    )
    assert done.returncode == 1
    assert (
        done.stderr.strip()
        == f"error: --dir {where / 'bin'}: cannot create {where / 'bin'}: Not a directory"
    )
