"""``python -m assay.shells --host H --port P``: sshd for one shell task.

The host key and the owner's public key come in the task's environment (secret variables the
master made for this shell); they are written to a directory only this user can read, outside
the working directory, with sshd's config and the session script, and removed when sshd ends.
Every session (a terminal, a command, sftp, port forwarding for VS Code's Remote-SSH) runs as
the agent's user, in the task's working directory, with the task's environment. A stop
(SIGTERM, SIGINT) is passed on to sshd.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import FrameType

from assay.protocol import SHELL_AUTHORIZED_KEY_ENV, SHELL_HOST_KEY_ENV

_SFTP_SERVERS = (
    "/usr/lib/openssh/sftp-server",
    "/usr/libexec/openssh/sftp-server",
    "/usr/libexec/sftp-server",
    "/usr/lib/ssh/sftp-server",
)
_PRIVSEP_DIR = "/run/sshd"
# What sshd sets for each session itself, or what only meant something to this process.
_NOT_PASSED = frozenset(
    {SHELL_HOST_KEY_ENV, SHELL_AUTHORIZED_KEY_ENV, "PWD", "OLDPWD", "SHLVL", "_", "TERM"}
)


def sshd_config(directory: Path, host: str, port: int, sftp_server: str | None) -> str:
    """sshd's config: this host and port only, the owner's key only, no password of any kind,
    every session through the session script."""
    lines = [
        f"Port {port}",
        f"ListenAddress {host}",
        f"HostKey {directory / 'host_key'}",
        "PidFile none",
        f"AuthorizedKeysFile {directory / 'authorized_keys'}",
        "AuthenticationMethods publickey",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "PermitRootLogin prohibit-password",
        "UsePAM no",
        # The files are this user's, in a directory only they can read; the user's home is
        # not asked about.
        "StrictModes no",
        "AllowTcpForwarding yes",
        "AllowStreamLocalForwarding no",
        "X11Forwarding no",
        "PermitTunnel no",
        "PrintMotd no",
        "PrintLastLog no",
        f"ForceCommand {directory / 'session'}",
    ]
    if sftp_server is not None:
        lines.append(f"Subsystem sftp {sftp_server}")
    return "\n".join(lines) + "\n"


def session_script(directory: Path, workdir: Path) -> str:
    """What every session runs: the task's environment, its working directory, then the
    command asked for (``ssh HOST -- COMMAND``, sftp) or the user's shell."""
    return "\n".join(
        [
            "#!/bin/sh",
            f". {shlex.quote(str(directory / 'environment'))}",
            f"cd {shlex.quote(str(workdir))} || exit 1",
            'if [ -n "$SSH_ORIGINAL_COMMAND" ]; then',
            '  exec "${SHELL:-/bin/sh}" -c "$SSH_ORIGINAL_COMMAND"',
            "fi",
            'exec "${SHELL:-/bin/sh}"',
            "",
        ]
    )


def environment_file(env: Mapping[str, str]) -> str:
    """``env`` as lines a POSIX shell sources (the shell's own keys left out)."""
    lines = [
        f"export {name}={shlex.quote(value)}"
        for name, value in sorted(env.items())
        if name.isidentifier() and name not in _NOT_PASSED and not name.startswith("SSH_")
    ]
    return "\n".join(lines) + "\n"


def _write(path: Path, text: str, mode: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m assay.shells")
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", required=True, type=int)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = _arguments(argv)
    host_key = os.environ.get(SHELL_HOST_KEY_ENV, "")
    authorized = os.environ.get(SHELL_AUTHORIZED_KEY_ENV, "")
    if not host_key or not authorized:
        print(
            f"assay: {SHELL_HOST_KEY_ENV} and {SHELL_AUTHORIZED_KEY_ENV} are not set; a shell is "
            "started by the master (`assay shell start`), which makes its keys",
            file=sys.stderr,
        )
        return 2
    sshd = shutil.which("sshd") or "/usr/sbin/sshd"
    if os.geteuid() == 0 and not os.path.isdir(_PRIVSEP_DIR):
        # sshd run by root wants its privilege separation directory, which only its service
        # (not installed to run here) would make.
        os.makedirs(_PRIVSEP_DIR, mode=0o755, exist_ok=True)
    sftp = next((p for p in _SFTP_SERVERS if os.access(p, os.X_OK)), None)
    directory = Path(tempfile.mkdtemp(prefix="assay-shell-"))
    try:
        _write(directory / "host_key", host_key.strip() + "\n", 0o600)
        _write(directory / "authorized_keys", authorized.strip() + "\n", 0o600)
        _write(directory / "environment", environment_file(os.environ), 0o600)
        _write(directory / "session", session_script(directory, Path.cwd()), 0o700)
        config = sshd_config(directory, args.host, args.port, sftp)
        _write(directory / "sshd_config", config, 0o600)
        child = subprocess.Popen([sshd, "-D", "-e", "-f", str(directory / "sshd_config")])

        def stop(signum: int, _frame: FrameType | None) -> None:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        code = child.wait()
        return 128 - code if code < 0 else code
    finally:
        shutil.rmtree(directory, ignore_errors=True)
