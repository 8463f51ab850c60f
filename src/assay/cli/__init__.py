"""The ``assay`` command line. Talks to the master through ``assay.client`` only."""

from __future__ import annotations

import sys
import traceback

import typer

from assay.errors import AssayError


def _report(exc: AssayError) -> None:
    from assay.cli._common import report_error

    try:
        report_error(exc)
    except typer.Exit as done:
        sys.exit(done.exit_code)


def main() -> None:
    from assay.cli._app import command
    from assay.cli._state import state

    try:
        command().main(prog_name="assay")
    except AssayError as exc:
        if state.debug:
            traceback.print_exc()
        _report(exc)
    except Exception as exc:
        # Request bodies are checked before they are sent (``request()``), so a pydantic error
        # here is an answer this client cannot read: one line, not a page of traceback.
        pydantic = sys.modules.get("pydantic")
        if pydantic is None or not isinstance(exc, pydantic.ValidationError):
            raise
        if state.debug:
            traceback.print_exc()
        _report(
            AssayError(
                f"an answer of the master does not fit this client's {exc.title} "
                f"({exc.error_count()} problem(s)); is the master a different version of "
                "assay? (--debug shows them)"
            )
        )


__all__ = ["main"]
