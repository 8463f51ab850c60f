"""No two modules of the command line, the client or the wire shapes import each other, however
indirectly: counting every import of a module, those inside functions and under
``TYPE_CHECKING`` too (a name lives with what owns it, and is imported from there)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[3] / "src"
PACKAGES = ("assay.cli", "assay.client", "assay.rest")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported(path: Path, modules: set[str]) -> set[str]:
    """The modules of ``modules`` that ``path`` imports anywhere in it: ``from pkg import mod``
    read as an import of ``pkg.mod`` alone, and a module's own packages (which Python runs
    before it anyway) left out."""
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            named = {f"{base}.{alias.name}" for alias in node.names}
            found.update(named if named <= modules else {base} | (named & modules))
    return {m for m in found if m in modules and m != me and not me.startswith(f"{m}.")}


def graph(package: str) -> dict[str, set[str]]:
    root = SRC.joinpath(*package.split("."))
    paths = {module_name(p): p for p in root.rglob("*.py")}
    return {name: imported(path, set(paths)) for name, path in paths.items()}


def cycle_in(edges: dict[str, set[str]]) -> list[str] | None:
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        for nxt in sorted(edges.get(node, ())):
            found = visit(nxt, [*path, node])
            if found is not None:
                return found
        done.add(node)
        return None

    for start in sorted(edges):
        found = visit(start, [])
        if found is not None:
            return found
    return None


def test_the_cycle_finder_sees_imports_inside_functions(tmp_path: Path) -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}}
    assert cycle_in(edges) == ["a", "b", "c", "a"]
    assert imported(SRC / "assay" / "cli" / "__init__.py", {"assay.cli._app"}) == {
        "assay.cli._app"
    }, "cli/__init__ imports _app inside main()"


@pytest.mark.parametrize("package", PACKAGES)
def test_no_two_modules_of_the_package_import_each_other(package: str) -> None:
    found = cycle_in(graph(package))
    assert found is None, f"import cycle: {' -> '.join(found or [])}"
