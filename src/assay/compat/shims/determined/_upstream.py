"""Determined's own package, where the trial's Python has it too: the parts assay's
``determined`` does not have (``determined.experimental.client``, ``determined.common``...)
are found there instead of failing, while what assay's has (the Core API, the Trial APIs, the
launchers) stays assay's.

Submodules are found through the package's ``__path__`` (:func:`extend`); a top-level name
assay's package lacks (``det.ExperimentConfig``, which Determined's own modules use) is read
from Determined's ``__init__``, run once as a module of its own (:func:`attribute`).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

_UPSTREAM = "determined._upstream_init"
"""The name Determined's own ``__init__`` runs under."""


def location(ours: Path) -> Path | None:
    """The directory of Determined's own package later on ``sys.path``, if any."""
    for entry in sys.path:
        candidate = Path(entry or ".") / "determined"
        try:
            if (candidate / "__init__.py").is_file() and candidate.resolve() != ours:
                return candidate
        except OSError:
            continue
    return None


def extend(package_path: list[str], ours: Path) -> Path | None:
    """Add Determined's own package, if found, after assay's on ``package_path``."""
    found = location(ours)
    if found is not None and str(found) not in package_path:
        package_path.append(str(found))
    return found


def attribute(upstream: Path | None, name: str) -> Any:
    """``name`` of Determined's own ``determined`` namespace; AttributeError where there is
    none, or where ``name`` is a submodule (which the import system then loads by the path)."""
    if upstream is None or name.startswith("__"):
        raise AttributeError(f"module 'determined' has no attribute {name!r}")
    if (upstream / name).is_dir() or (upstream / f"{name}.py").is_file():
        raise AttributeError(f"module 'determined' has no attribute {name!r}")
    module = sys.modules.get(_UPSTREAM) or _load(upstream)
    try:
        return getattr(module, name)
    except AttributeError:
        raise AttributeError(f"module 'determined' has no attribute {name!r}") from None


def _load(upstream: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(_UPSTREAM, upstream / "__init__.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Registered before it runs: Determined's modules read ``det.<name>`` while it does.
    sys.modules[_UPSTREAM] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[_UPSTREAM]
        raise
    return module
