"""The root's options (``--master``, ``--debug``), set before any subcommand runs, and the
width of output that goes to no terminal.

Apart from ``_common`` so that using them loads nothing: ``assay --help`` needs neither rich
nor the client."""

from __future__ import annotations

PIPE_WIDTH = 100_000
"""The width output gets when stdout is not a terminal: wide enough that no log line, YAML value,
table cell or line of help is wrapped or cut for the file or pipe it goes to."""


class State:
    master: str | None = None
    debug: bool = False


state = State()
