"""The training frameworks an agent says its trials can import, and what installs each.

An agent reports them in its hello (:attr:`~assay.protocol.Hello.frameworks`); the master
refuses, at submission, an experiment whose entrypoint imports one that no connected agent of
its pool has, instead of letting every trial fail on ``ModuleNotFoundError``.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util

FRAMEWORKS: dict[str, str] = {
    "torch": "pip install torch==2.13.0",
    "tensorflow": "pip install tensorflow",
    "keras": "pip install keras",
    "deepspeed": "pip install deepspeed",
    "horovod": "pip install horovod",
    "jax": "pip install jax",
    "lightning": "pip install lightning",
    "pytorch_lightning": "pip install pytorch-lightning",
    "determined": "pip install determined==0.38.1",
}
"""Each framework's top-level module, and the command that installs it where trials run
(torch at the version the examples are tested with); ``determined`` is Determined's own package,
whose parts assay's ``determined`` lacks (``determined.experimental.client``) a trial then finds
there."""


def importable_frameworks() -> dict[str, bool]:
    """Which of :data:`FRAMEWORKS` this Python can import (the trials an agent starts run its
    interpreter). Found on the module path only, never by importing them: importing torch
    alone takes seconds."""
    found = {}
    for module in FRAMEWORKS:
        if module == "determined":
            # Installed as a distribution: a directory named determined (assay's own, on a
            # trial's path) is not it.
            found[module] = _distribution("determined")
            continue
        try:
            found[module] = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found[module] = False  # a broken install (a module without a spec) is not one
    return found


def _distribution(name: str) -> bool:
    try:
        importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True
