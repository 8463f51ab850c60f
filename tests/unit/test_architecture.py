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
}


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
        module: sorted(imports & FORBIDDEN[package])
        for module, imports in imported_packages(package).items()
        if imports & FORBIDDEN[package]
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
