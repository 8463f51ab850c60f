"""The ``assay`` command line. Talks to the master through ``assay.client`` only.

Each command runs in the ``assay`` process itself, which imports only what that command needs
(``assay.cli._app``): importing this package costs next to nothing.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing's import is a few percent of a short command's start
if TYPE_CHECKING:
    from assay.errors import AssayError


def _report(exc: AssayError) -> None:
    import typer

    from assay.cli._common import report_error

    try:
        report_error(exc)
    except typer.Exit as done:
        sys.exit(done.exit_code)


def _print_traceback() -> None:
    # Imported only when asked for (--debug): traceback loads linecache and tokenize.
    import traceback

    traceback.print_exc()


def main() -> None:
    """The ``assay`` script: runs the command ``sys.argv`` names."""
    if sys.stdout is None or sys.stderr is None:
        # Started with a standard stream closed (`assay e list >&-`): the interpreter gave it
        # no stream at all.
        if sys.stderr is not None:
            sys.stderr.write("error: standard output is closed; nothing could be shown\n")
        sys.exit(1)
    from assay.cli._app import command
    from assay.cli._state import state
    from assay.errors import AssayError

    try:
        command().main(prog_name="assay")
    except OSError as exc:
        # Click ends a broken pipe (`| head`) quietly itself; what reaches here is output that
        # cannot be written (a full disk) or a file the command could not read or write.
        if state.debug:
            _print_traceback()
        _report(AssayError(_os_error(exc)))
    except AssayError as exc:
        if state.debug:
            _print_traceback()
        _report(exc)
    except Exception as exc:
        # Request bodies are checked before they are sent (``request()``), so a pydantic error
        # here is an answer this client cannot read: one line, not a page of traceback.
        pydantic = sys.modules.get("pydantic")
        if pydantic is None or not isinstance(exc, pydantic.ValidationError):
            raise
        if state.debug:
            _print_traceback()
        _report(
            AssayError(
                f"an answer of the master does not fit this client's {exc.title} "
                f"({exc.error_count()} problem(s)); is the master a different version of "
                "assay? (--debug shows them)"
            )
        )


def _os_error(exc: OSError) -> str:
    try:
        sys.stdout.flush()
    except OSError:
        # What is buffered can never be written: drop it, or the interpreter's last flush
        # reports the same error again with a traceback of its own.
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - stands for stdout until exit
        return f"cannot write to standard output: {exc.strerror or exc}"
    where = f": {exc.filename}" if exc.filename else ""
    return f"{exc.strerror or exc}{where}"


__all__ = ["main"]
