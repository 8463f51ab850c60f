"""The ``assay`` command line. Talks to the master through ``assay.client`` only.

``main`` hands the command to the command server when one answers (``assay.cli._served``), and
runs it here otherwise (``run_here``): importing this package costs next to nothing.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing's import is a tenth of what `assay` takes to hand over
if TYPE_CHECKING:
    from assay.errors import AssayError


def _report(exc: AssayError) -> None:
    import typer

    from assay.cli._common import report_error

    try:
        report_error(exc)
    except typer.Exit as done:
        sys.exit(done.exit_code)


def run_here() -> None:
    """Runs the command ``sys.argv`` names in this process."""
    import traceback

    from assay.cli._app import command
    from assay.cli._state import state
    from assay.errors import AssayError

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


def main() -> None:
    """The ``assay`` script."""
    from assay.cli._served import run_served

    status = run_served(sys.argv[1:])
    if status is not None:
        sys.exit(status)
    run_here()


__all__ = ["main", "run_here"]
