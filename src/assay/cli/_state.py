"""The root's options (``--master``, ``--debug``), set before any subcommand runs.

Apart from ``_common`` so that setting them loads nothing: ``assay --help`` needs neither rich
nor the client."""

from __future__ import annotations


class State:
    master: str | None = None
    debug: bool = False


state = State()
