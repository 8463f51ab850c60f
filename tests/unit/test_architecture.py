"""The layering DESIGN.md promises, checked on the real import graph."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "assay"

FORBIDDEN = {
    "searcher": {"db", "api", "master", "agent"},
    "scheduler": {"db", "api", "master", "agent"},
    "config": {"db", "api", "master", "agent"},
    "core": {"db", "api", "master", "scheduler"},
    "cli": {"db", "api", "master", "scheduler"},
    "client": {"db", "api", "master", "scheduler"},
    "master": {"api"},
    # The wire shapes: pydantic and the standard library only, so clients stay light.
    "rest": {"db", "api", "master", "agent", "scheduler", "searcher", "config", "core"}
    | {"cli", "client", "context", "storage"},
}

# Module -> packages it may import despite its layer. The state enums live in the master's
# standard-library-only ``_states`` module, which ``rest._states`` loads without the master
# package (see there) until the enums move to a package of their own.
EXEMPT = {"rest/_states.py": {"master"}}


def imported_packages(package: str) -> dict[str, set[str]]:
    """assay sub-packages each module of ``package`` imports (module path -> packages)."""
    found: dict[str, set[str]] = {}
    for path in (SRC / package).rglob("*.py"):
        tree = ast.parse(path.read_text())
        names: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
        found[str(path.relative_to(SRC))] = {
            n.split(".")[1] for n in names if n.startswith("assay.") and len(n.split(".")) > 1
        }
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_only_what_its_layer_may(package: str) -> None:
    violations = {
        module: sorted(imports & FORBIDDEN[package] - EXEMPT.get(module, set()))
        for module, imports in imported_packages(package).items()
        if imports & FORBIDDEN[package] - EXEMPT.get(module, set())
    }
    assert not violations, f"{package} must not import {sorted(FORBIDDEN[package])}: {violations}"


def test_importing_the_harness_pulls_in_neither_the_server_stack_nor_numpy() -> None:
    code = (
        "import sys, assay, assay.core\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'numpy', 'torch', 'sqlalchemy', 'fastapi', 'starlette', 'uvicorn', 'pydantic', "
        "'alembic', 'optuna', 'websockets'} or m.split('.')[:2] in "
        "[['assay', x] for x in ('db', 'api', 'master', 'scheduler', 'agent')])\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"import assay.core loaded: {out.stdout.strip()}"
