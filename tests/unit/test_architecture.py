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


# -- the wire shapes --------------------------------------------------------------------------

STATES_MODULE = Path("protocol/_states.py")
FROZEN = (Path("db/migrations"),)
"""Migrations describe the schema as it was: they must not follow a renamed state, so they may
spell states as literals."""


def state_literals(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, value) of each string constant in ``tree`` that spells a state."""
    from assay.protocol import STATE_ENUMS

    states = {member.value for enum in STATE_ENUMS for member in enum}
    return sorted(
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in states
    )


def test_the_literal_scan_finds_a_state_spelled_as_a_string() -> None:
    code = 'x = "QUEUED"\nif state in ("COMPLETED", "ERROR"):\n    y = f"{state} is QUEUED"\n'
    assert state_literals(ast.parse(code)) == [(1, "QUEUED"), (2, "COMPLETED"), (2, "ERROR")]


def test_states_are_spelled_only_in_their_enum_module() -> None:
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        if rel == STATES_MODULE or any(rel.is_relative_to(p) for p in FROZEN):
            continue
        hits = state_literals(ast.parse(path.read_text()))
        if hits:
            found[str(rel)] = hits
    assert not found, f"use the enums of assay.protocol instead of these literals: {found}"


def test_the_protocol_package_needs_only_the_standard_library() -> None:
    allowed = {"assay.errors", "assay.protocol"}
    outside = {}
    for path in (SRC / "protocol").rglob("*.py"):
        for name in sorted(_imported_modules(ast.parse(path.read_text()))):
            top = name.split(".")[0]
            if top == "assay":
                if not any(name == a or name.startswith(a + ".") for a in allowed):
                    outside.setdefault(path.name, []).append(name)
            elif top not in sys.stdlib_module_names and top != "__future__":
                outside.setdefault(path.name, []).append(name)
    assert not outside, f"assay.protocol must import only the standard library: {outside}"


def _imported_modules(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names
