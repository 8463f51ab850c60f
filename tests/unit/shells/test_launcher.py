"""What a shell's launcher gives sshd: a config that lets in only the owner's key, on the
reserved address only, and sessions with the task's environment in its working directory."""

from __future__ import annotations

import subprocess
from pathlib import Path

from assay.config import load_shell_config
from assay.protocol import SHELL_AUTHORIZED_KEY_ENV, SHELL_HOST_KEY_ENV
from assay.shells import sshd_config
from assay.shells._launch import environment_file, session_script


def test_sshd_listens_on_the_reserved_address_and_takes_the_owners_key_only(
    tmp_path: Path,
) -> None:
    config = sshd_config(tmp_path, "10.0.0.5", 41000, "/usr/lib/openssh/sftp-server")
    lines = set(config.splitlines())
    assert {"Port 41000", "ListenAddress 10.0.0.5"} <= lines
    assert f"AuthorizedKeysFile {tmp_path / 'authorized_keys'}" in lines
    assert {
        "AuthenticationMethods publickey",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
    } <= lines
    assert f"ForceCommand {tmp_path / 'session'}" in lines
    assert "Subsystem sftp /usr/lib/openssh/sftp-server" in lines


def test_the_environment_file_keeps_the_tasks_variables_and_never_the_keys() -> None:
    text = environment_file(
        {
            "PATH": "/venv/bin:/usr/bin",
            "ASSAY_TASK_ID": "7",
            "QUOTED": "it's $HOME",
            SHELL_HOST_KEY_ENV: "-----BEGIN OPENSSH PRIVATE KEY-----",
            SHELL_AUTHORIZED_KEY_ENV: "ssh-ed25519 AAAA",
            "SSH_CONNECTION": "x",
            "not-a-name": "x",
        }
    )
    assert "PRIVATE KEY" not in text and "AAAA" not in text and "not-a-name" not in text
    read = subprocess.run(
        ["/bin/sh", "-c", f'{text}\nprintf \'%s|%s|%s\' "$PATH" "$ASSAY_TASK_ID" "$QUOTED"'],
        capture_output=True,
        text=True,
        check=True,
        env={},
    )
    assert read.stdout == "/venv/bin:/usr/bin|7|it's $HOME"


def test_a_session_runs_its_command_in_the_working_directory(tmp_path: Path) -> None:
    (tmp_path / "environment").write_text("export GREETING=hi\n")
    work = tmp_path / "work dir"
    work.mkdir()
    script = tmp_path / "session"
    script.write_text(session_script(tmp_path, work))
    script.chmod(0o700)
    ran = subprocess.run(
        [str(script)],
        env={"SSH_ORIGINAL_COMMAND": 'echo "$GREETING from $(pwd)"; exit 4', "SHELL": "/bin/sh"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert (ran.returncode, ran.stdout) == (4, f"hi from {work}\n")


def test_a_shell_config_refuses_what_only_commands_and_notebooks_take() -> None:
    import pytest

    from assay.errors import InvalidConfig

    with pytest.raises(InvalidConfig) as refused:
        load_shell_config("entrypoint: python3 x.py\nidle_timeout: 10m\n")
    paths = [d.path for d in refused.value.details]
    assert paths == ["entrypoint", "idle_timeout"]
    spec = load_shell_config("", overrides=["resources.slots=0"])
    assert (spec.kind, spec.roles[0].slots, spec.roles[0].ports) == ("shell", 0, {"ssh": 1})
