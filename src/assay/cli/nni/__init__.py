"""Everything NNI in the CLI: ``assay nni`` (nnictl's commands and status names) and the table
that translates an ``nnictl`` command line (:func:`translate_nnictl`).

``app`` is loaded on first use, as every command group of the lazy command tree is."""

from __future__ import annotations

from typing import Any

from assay.cli.nni._nnictl import NNICTL, NNICTL_RULES, translate_nnictl

__all__ = ["NNICTL", "NNICTL_RULES", "app", "ranked", "translate_nnictl"]


def __getattr__(name: str) -> Any:
    if name in ("app", "ranked"):
        from assay.cli.nni import _commands

        return getattr(_commands, name)
    raise AttributeError(name)
