"""``assay shell``: an SSH session on an agent, through the master (Determined's ``det shell``).

The owner's ``ssh`` reaches the shell's sshd through a tunnel: its ``ProxyCommand`` is
``assay shell tunnel ID``, which relays the TCP stream over a WebSocket to the master. The key
sshd lets in and sshd's host key (checked, never trusted on first use) are kept in the user's
config directory, readable by them only.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from assay.cli._common import (
    CsvOption,
    JsonOption,
    check_formats,
    client,
    console,
    err_console,
    esc,
    fail,
    listing_table,
    print_json,
    print_table,
    styled_state,
    when,
)

if TYPE_CHECKING:
    from assay import rest
    from assay.client import Client

app = typer.Typer(no_args_is_help=True)  # help: assay.cli._app.SUBCOMMANDS

ShellId = Annotated[int, typer.Argument(help="its id (`assay shell list`)", metavar="ID")]
_PASS_ON = {"allow_interspersed_args": False, "ignore_unknown_options": True}


@app.command(context_settings=_PASS_ON)
def start(
    ssh_args: Annotated[
        list[str] | None,
        typer.Argument(help="options for ssh, after --", metavar="[-- SSH-ARGS]"),
    ] = None,
    config: Annotated[
        list[str] | None,
        typer.Option("--config", help="KEY=VALUE of the shell config, e.g. resources.slots=0"),
    ] = None,
    config_file: Annotated[
        Path | None, typer.Option("--config-file", help="a Determined shell config (YAML)")
    ] = None,
    context_dir: Annotated[
        Path | None,
        typer.Option("--context", "-c", help="directory to upload; sessions start in it"),
    ] = None,
    detach: Annotated[
        bool, typer.Option("--detach", "-d", help="print its id at once; open no session")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Start a shell on a slot (`--config resources.slots=0` for none) and open an SSH session
    in it; only you and admins can reach it."""
    from assay.cli._served import start_from

    if detach and _after_dashes(ssh_args):
        # Nothing would take them: -d opens no session.
        fail(
            "ssh options after -- are for the session `shell start` opens, and -d opens none; "
            "add them to the line `assay shell show-ssh-command ID` prints instead"
        )
    c = client()
    shell = start_from(c.start_shell, config_file, config, context_dir)
    if as_json and detach:
        print_json(shell)
        return
    if not as_json:
        console.print(
            f"shell {shell.id} ({esc(shell.name)}): {styled_state(shell.state.value)}",
            highlight=False,
        )
        for note in shell.notes:
            console.print(f"note: {note}", highlight=False, markup=False)
    if detach:
        err_console.print(
            f"`assay shell open {shell.id}` opens a session once it runs; "
            f"`assay shell kill {shell.id}` stops it",
            highlight=False,
            soft_wrap=True,
        )
        return
    shell = _wait_ready(c, shell)
    if as_json:
        print_json(shell)
        return
    _exec_ssh(_ssh_argv(c, shell.id, _after_dashes(ssh_args)))


@app.command("open", context_settings=_PASS_ON)
def open_(
    shell_id: ShellId,
    command: Annotated[
        list[str] | None,
        typer.Argument(help="a command to run there, after --; none: a terminal"),
    ] = None,
) -> None:
    """Open a terminal in a shell, or run COMMAND there (its output and exit code are ssh's)."""
    c = client()
    _wait_ready(c, c.shell(shell_id))
    argv = _ssh_argv(c, shell_id, [])
    argv += _after_dashes(command)
    _exec_ssh(argv)


@app.command("show-ssh-command")
def show_ssh_command(shell_id: ShellId) -> None:
    """Print the ssh command line that opens a session in the shell (with its ProxyCommand, as
    VS Code's Remote-SSH and an ~/.ssh/config take it)."""
    c = client()
    # A line to paste into an ssh config is wanted now: a queued shell's would wait unseen.
    queued = (
        f"the line is printed once it runs (`assay job list` says why it waits; "
        f"`assay shell open {shell_id}` waits for it)"
    )
    _wait_ready(c, c.shell(shell_id), queued=queued)
    typer.echo(shlex.join(_ssh_argv(c, shell_id, [])))


@app.command(hidden=True)
def tunnel(shell_id: ShellId) -> None:
    """Relay stdin and stdout to the shell's sshd (ssh's ProxyCommand)."""
    from assay.client import relay

    connection = client().tunnel(shell_id)
    with connection:
        relay(connection, sys.stdin.buffer, sys.stdout.buffer)


def _after_dashes(args: list[str] | None) -> list[str]:
    """``args`` without the ``--`` that ended assay's own options."""
    args = list(args or [])
    return args[1:] if args[:1] == ["--"] else args


def _wait_ready(c: Client, shell: rest.Shell, *, queued: str = "") -> rest.Shell:
    """``shell`` once its sshd greets through the tunnel (or its end, said in one line);
    ``queued``: what to say instead of waiting while it is queued."""
    from assay.cli._served import wait_serving

    def serves(s: rest.Shell) -> bool:
        return bool(s.ssh_user) and _answers(c, s.id)

    return wait_serving(c, shell, f"shell {shell.id}", c.shell, serves, queued=queued)


def _answers(c: Client, shell_id: int) -> bool:
    """Whether sshd greets through the tunnel."""
    from assay.errors import Conflict, Unavailable

    try:
        connection = c.tunnel(shell_id)
    except (Conflict, Unavailable):  # not running yet, or sshd not listening yet
        return False
    with connection:
        try:
            greeting = connection.recv(timeout=10)
        except Exception:  # closed or silent: not ready
            return False
    return isinstance(greeting, bytes) and greeting.startswith(b"SSH-")


def _key_directory(c: Client, shell_id: int) -> Path:
    """Where the shell's key and known_hosts are kept for the user (one per master and shell)."""
    from assay.client import config_dir

    master = hashlib.sha256(c.url.encode()).hexdigest()[:12]
    return config_dir() / "shells" / master / str(shell_id)


def _key_files(c: Client, key: rest.ShellKey) -> tuple[Path, Path]:
    """The shell's private key and known_hosts, written private to the user's config
    directory (one directory per master and shell)."""
    from assay.files import write_private

    directory = _key_directory(c, key.shell_id)
    private, known = directory / "key", directory / "known_hosts"
    write_private(private, key.private_key)
    write_private(known, f"{key.host_alias} {key.host_public_key}\n")
    return private, known


def _ssh_argv(c: Client, shell_id: int, extra: list[str]) -> list[str]:
    key = c.shell_key(shell_id)
    private, known = _key_files(c, key)
    tunnel = shlex.join([sys.executable, "-m", "assay.cli", "--master", c.url])
    return [
        "ssh",
        "-o", f"ProxyCommand={tunnel} shell tunnel {shell_id}",
        "-o", f"HostKeyAlias={key.host_alias}",
        "-o", f"UserKnownHostsFile={known}",
        "-o", "StrictHostKeyChecking=yes",
        "-o", "IdentitiesOnly=yes",
        "-i", str(private),
        *extra,
        # What follows the destination is the command to run there, as written.
        "--",
        f"{key.ssh_user}@{key.host_alias}",
    ]  # fmt: skip


def _exec_ssh(argv: list[str]) -> None:
    ssh = shutil.which("ssh")
    if ssh is None:
        fail(
            "ssh (OpenSSH's client) is not installed here; install it (apt-get install "
            "openssh-client), then run this again"
        )
    sys.stdout.flush()
    sys.stderr.flush()
    # ssh takes over the terminal: its exit code, Ctrl-C and window size are the session's.
    os.execv(ssh, argv)


@app.command("list")
def list_(
    show_all: Annotated[bool, typer.Option("--all", "-a", help="ended ones too")] = False,
    as_json: JsonOption = False,
    as_csv: CsvOption = False,
) -> None:
    """Shells that run or wait (--all: ended ones too), newest first."""
    check_formats(as_json, as_csv)
    shells = client().shells(all_=show_all)
    if as_json:
        print_json(shells)
        return
    table = listing_table(
        "ID", "Name", "State", "User", "Slots", "Pool", "Started", empty="No shells."
    )
    for s in shells:
        table.add_row(
            str(s.id),
            esc(s.name),
            styled_state(s.state.value),
            esc(s.user),
            str(s.slots),
            esc(s.resource_pool),
            when(s.created_at),
        )
    print_table(table, as_csv)


@app.command()
def logs(
    shell_id: ShellId,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="stream until it ends")] = False,
) -> None:
    """sshd's output (who signed in, from where), and assay's lines about its start and end."""
    from assay.cli._jobrun import print_logs

    client().shell(shell_id)  # one line naming it when it is not a shell
    print_logs(shell_id, None, None, follow, prefixed=False)


@app.command()
def kill(shell_id: ShellId) -> None:
    """Stop a shell (every session in it ends) and free its slot."""
    c = client()
    shell = c.kill_shell(shell_id)
    # Its key opens nothing any more: what `open` wrote of it here goes with it.
    shutil.rmtree(_key_directory(c, shell_id), ignore_errors=True)
    console.print(f"shell {shell.id}: {styled_state(shell.state.value)}", highlight=False)
