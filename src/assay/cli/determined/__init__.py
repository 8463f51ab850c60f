"""Everything Determined in the CLI: the table that translates a ``det`` command line
(:func:`translate_det`), run by ``assay compat det`` and the opt-in ``det`` wrapper."""

from __future__ import annotations

from assay.cli.determined._det import DET, DET_RULES, translate_det

__all__ = ["DET", "DET_RULES", "translate_det"]
