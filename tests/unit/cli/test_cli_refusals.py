"""What the command line refuses before it talks to any master: one line that names what is
wrong, never a traceback. No master answers at the URL these commands are given, so one that
sent a request anyway would say so instead."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

NOWHERE = "http://127.0.0.1:9"
"""The discard port: nothing answers there."""


def assay(tmp_path: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")},
        "ASSAY_HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    return subprocess.run(
        [sys.executable, "-c", "from assay.cli import main; main()", "-m", NOWHERE, *args],
        input=stdin,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("args", "stdin"),
    [
        (("user", "deactivate", ""), ""),
        (("user", "activate", "  "), ""),
        (("user", "login", ""), "a-password\n"),
        (("user", "create", ""), "long-enough\n"),
    ],
)
def test_an_empty_username_is_refused_naming_the_field(
    tmp_path: Path, args: tuple[str, ...], stdin: str
) -> None:
    assert one_line_error(assay(tmp_path, *args, stdin=stdin)) == (
        "error: username: must not be empty"
    )


def test_change_password_of_an_empty_name_is_refused_not_taken_as_mine(tmp_path: Path) -> None:
    done = assay(tmp_path, "user", "change-password", "", stdin="new-password\n")
    assert one_line_error(done) == "error: username: must not be empty"


def test_a_password_too_long_to_be_one_is_refused_before_signing_in(tmp_path: Path) -> None:
    done = assay(tmp_path, "user", "login", "alice", stdin="p" * 5000 + "\n")
    assert one_line_error(done) == "error: password: String should have at most 256 characters"


def test_a_yaml_syntax_error_is_said_once(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("name: x\nsearcher: {name: single\n  metric: [\n")
    done = assay(tmp_path, "experiment", "create", str(config), str(tmp_path))
    line = one_line_error(done)
    assert line.startswith("error: invalid YAML in ") and "at line 3, column 9" in line
    assert done.stderr.count("expected ',' or '}'") == 1


def test_an_oversized_config_is_refused_with_its_real_size(tmp_path: Path) -> None:
    config = tmp_path / "big.yaml"
    config.write_bytes(b"#" * 9_000_000)
    done = assay(tmp_path, "experiment", "create", str(config), str(tmp_path))
    assert one_line_error(done) == (
        f"error: {config} has 9,000,000 bytes; a config may have at most 8,388,608 bytes (8 MiB)"
    )
    # A stream has no size: as much as was read is all that can be said.
    endless = assay(tmp_path, "preview-search", "/dev/zero")
    assert one_line_error(endless) == (
        "error: /dev/zero has more than 8,388,608 bytes; a config may have at most 8,388,608 "
        "bytes (8 MiB)"
    )


def test_experiment_create_refuses_an_openpai_job_naming_the_command_that_takes_it(
    tmp_path: Path,
) -> None:
    job = tmp_path / "hello.yaml"
    job.write_text(
        "protocolVersion: 2\nname: hello\ntype: job\n"
        "taskRoles:\n  worker:\n    instances: 1\n    commands: [echo hi]\n"
    )
    assert one_line_error(assay(tmp_path, "experiment", "create", str(job), str(tmp_path))) == (
        f"error: {job} is an OpenPAI job, not an experiment config: "
        f"submit it with `assay job submit {job}`"
    )


@pytest.mark.parametrize(
    ("setting", "wanted"),
    [
        ("max-slots", "an integer or 'none' (no limit)"),
        ("priority", "an integer"),
        ("weight", "a number"),
    ],
)
def test_a_setting_that_is_no_number_is_refused_naming_the_kind_in_words(
    tmp_path: Path, setting: str, wanted: str
) -> None:
    done = assay(tmp_path, "e", "set", setting, "18", "abc")
    assert one_line_error(done) == f"error: {setting} must be {wanted}, got 'abc'"


def test_ssh_options_for_a_detached_shell_which_opens_no_session_are_refused(
    tmp_path: Path,
) -> None:
    done = assay(tmp_path, "shell", "start", "-d", "--", "-L", "8888:localhost:8888")
    line = one_line_error(done)
    assert "-d opens none" in line and "assay shell show-ssh-command ID" in line
