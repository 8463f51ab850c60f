"""``assay compat``: Determined's ``det`` and NNI's ``nnictl`` command names, opt-in, and where
the shipped ``determined`` and ``nni`` packages are (``shims-path``).

``install-commands`` writes two small wrapper scripts; each runs ``assay compat det ARGS`` (or
``nnictl``), which translates the words (:mod:`assay.cli.determined`, :mod:`assay.cli.nni`)
and runs the ``assay`` command they become. Nothing is installed unless asked: a ``det`` on
the ``PATH`` that is not Determined's would surprise whoever has Determined too.
"""

from __future__ import annotations

import os
import shlex
import stat
import sys
from pathlib import Path
from typing import Annotated

import typer

from assay.cli._common import console, err_console, fail

app = typer.Typer(no_args_is_help=True)  # help: assay.cli._app.SUBCOMMANDS

COMMANDS = ("det", "nnictl")
MARKER = "# assay compat wrapper: written by `assay compat install-commands`"

Dir = Annotated[
    Path | None,
    typer.Option(
        "--dir", help="where the commands go (default: beside the running `assay` command)"
    ),
]


def default_dir() -> Path:
    """The directory of the running ``assay`` command: where ``assay`` is on the PATH, so the
    wrappers are too."""
    argv0 = Path(sys.argv[0])
    if argv0.name == "assay" and argv0.is_file():
        return argv0.resolve().parent
    return Path(sys.executable).parent


def wrapper_text(tool: str) -> str:
    # The interpreter running now, by its full path: the wrapper works wherever it is put,
    # in or out of an activated environment.
    python = shlex.quote(sys.executable)
    code = shlex.quote(f"import sys; sys.argv[0] = {tool!r}; from assay.cli import main; main()")
    return f'#!/bin/sh\n{MARKER}\nexec {python} -c {code} compat {tool} "$@"\n'


def _ours(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return MARKER.encode() in f.read(4096)
    except OSError:
        return False


def _make_dir(where: Path) -> None:
    """Create ``where`` and its missing parents, each 0755 whatever the umask: a directory of
    commands others may run (a shared bin)."""
    missing = [d for d in (where, *where.parents) if not d.exists()]
    for d in reversed(missing):
        try:
            d.mkdir(mode=0o755)
            d.chmod(0o755)
        except FileExistsError:
            if not d.is_dir():
                fail(f"--dir {where}: {d} exists and is not a directory")
        except OSError as exc:
            fail(f"--dir {where}: cannot create {d}: {exc.strerror or exc}")
    if not where.is_dir():
        fail(f"--dir {where} is not a directory")


@app.command("install-commands")
def install_commands(directory: Dir = None) -> None:
    """Put `det` and `nnictl` wrappers beside `assay` (or in --dir)."""
    where = directory or default_dir()
    if not where.is_dir():
        _make_dir(where)
    for tool in COMMANDS:
        path = where / tool
        if (path.exists() or path.is_symlink()) and not _ours(path):
            fail(f"{path} exists and is not an assay wrapper; remove it or choose --dir")
    for tool in COMMANDS:
        path = where / tool
        try:
            path.write_text(wrapper_text(tool))
            path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        except OSError as exc:
            fail(f"cannot write {path}: {exc.strerror or exc}")
    console.print(
        f"installed {', '.join(COMMANDS)} in {where} "
        "(remove them with `assay compat uninstall-commands`)"
    )
    if str(where) not in os.environ.get("PATH", "").split(os.pathsep):
        err_console.print(f"[bold yellow]note:[/] {where} is not on your PATH", highlight=False)


@app.command("shims-path")
def shims_path() -> None:
    """Print the directory of the shipped `nni` and `determined` packages, to run a trial
    without assay: PYTHONPATH=$(assay compat shims-path) python3 main.py"""
    # Loaded here, not at start: the CLI's start-up imports stay the client's.
    from assay.compat import SHIMS_DIR

    # Plain print: a path rich wrapped or coloured would be a wrong PYTHONPATH.
    print(SHIMS_DIR)


@app.command("uninstall-commands")
def uninstall_commands(directory: Dir = None) -> None:
    """Remove the wrappers install-commands wrote (and nothing else)."""
    where = directory or default_dir()
    removed = []
    for tool in COMMANDS:
        path = where / tool
        if _ours(path):
            path.unlink()
            removed.append(tool)
        elif path.exists():
            err_console.print(f"left {path}: not an assay wrapper", highlight=False)
    if removed:
        console.print(f"removed {', '.join(removed)} from {where}")
    else:
        console.print(f"no assay wrappers in {where}")


_PASS_THROUGH = {
    "allow_extra_args": True,
    "ignore_unknown_options": True,
    # --help belongs to the command translated, not to this entry.
    "help_option_names": [],
}


def _run(tool: str, args: list[str]) -> None:
    if tool == "det":
        from assay.cli.determined import translate_det

        done = translate_det(args, os.environ)
    else:
        from assay.cli.nni import translate_nnictl

        done = translate_nnictl(args)
    for note in done.notes:
        err_console.print(f"[dim]{tool}: {note}[/]", highlight=False)
    if done.argv is None:
        fail(done.error or f"{tool} {' '.join(args)} is not mapped")
    from assay.cli._app import command

    command().main(args=done.argv, prog_name="assay")


@app.command("det", hidden=True, context_settings=_PASS_THROUGH)
def det(args: Annotated[list[str] | None, typer.Argument()] = None) -> None:
    """Run a Determined `det` command line as the assay command it maps to."""
    _run("det", list(args or []))


@app.command("nnictl", hidden=True, context_settings=_PASS_THROUGH)
def nnictl(args: Annotated[list[str] | None, typer.Argument()] = None) -> None:
    """Run an NNI `nnictl` command line as the assay command it maps to."""
    _run("nnictl", list(args or []))
