"""``python -m assay.cli``: the ``assay`` command (what a shell's ``ProxyCommand`` runs, with the
interpreter the CLI itself runs in)."""

from __future__ import annotations

from assay.cli import main

main()
