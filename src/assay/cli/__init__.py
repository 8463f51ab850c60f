"""The ``assay`` command line. Talks to the master through ``assay.client`` only."""

from __future__ import annotations

import sys
import traceback

import typer

from assay.errors import AssayError


def main() -> None:
    from assay.cli._app import app
    from assay.cli._common import report_error, state

    try:
        app()
    except AssayError as exc:
        if state.debug:
            traceback.print_exc()
        try:
            report_error(exc)
        except typer.Exit as done:
            sys.exit(done.exit_code)


__all__ = ["main"]
