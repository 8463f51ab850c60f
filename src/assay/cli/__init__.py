"""The ``assay`` command line. Talks to the master through ``assay.client`` only."""

from __future__ import annotations

import sys

import typer

from assay.errors import AssayError


def main() -> None:
    from assay.cli._app import app
    from assay.cli._common import report_error

    try:
        app()
    except AssayError as exc:
        try:
            report_error(exc)
        except typer.Exit as done:
            sys.exit(done.exit_code)


__all__ = ["main"]
