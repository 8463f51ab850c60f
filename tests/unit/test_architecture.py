"""The layering DESIGN.md promises, checked on the real import graph.

Imports are read from the source (every ``import`` and ``from ... import`` anywhere in a module,
those under ``TYPE_CHECKING`` included), with relative imports resolved and ``from assay import
db`` read as an import of ``assay.db``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "assay"

ALLOWED: dict[str, set[str]] = {
    # Each package and the assay packages it may import besides ``errors`` (the table in
    # docs/architecture.md). Anything not listed is refused, so a new edge is a decision.
    "assay": {"core"},
    "errors": set(),
    "files": set(),
    # Safe tar extraction on every Python assay supports (the standard library only).
    "tarsafe": set(),
    # A port to listen on later, outside the range outgoing connections draw from.
    "ports": set(),
    "protocol": set(),
    # The wire shapes: pydantic and the standard library only, so clients stay light.
    "rest": {"protocol"},
    "config": set(),
    "context": {"tarsafe"},
    "storage": set(),
    "searcher": {"config", "protocol"},
    "scheduler": set(),
    "db": {"protocol"},
    "master": {
        # compat: the custom searcher's worker gets the shims (an NNI tuner's ``nni.tuner``).
        "compat",
        "config",
        "context",
        "db",
        "files",
        "protocol",
        "rest",
        "scheduler",
        "searcher",
        "storage",
        "rm",
    },
    # The resource managers run allocations as the agent does (its runner, in a Slurm job or
    # a pod), and reach the master only through the protocol's messages.
    "rm": {"agent", "client", "config", "files", "protocol"},
    "api": {"master", "rest", "protocol", "config", "context", "scheduler"},
    # core and storage only in the zygote, the interpreter that preloads the harness for the
    # trial processes it forks (the agent daemon itself imports neither).
    "agent": {"protocol", "client", "context", "files", "compat", "core", "storage"},
    "core": {"protocol", "client", "storage"},
    # The upstream shims (``determined``, ``nni``) are built on the harness.
    "compat": {"core", "protocol", "client", "launch", "ports"},
    # Launchers run inside trials: the standard library and the wire shapes only.
    "launch": {"protocol", "ports"},
    # A notebook's launcher runs inside its task: its settings' names and nothing of the server.
    "notebooks": {"protocol"},
    # So does a shell's.
    "shells": {"protocol"},
    "client": {"rest", "files", "tarsafe"},
    # searcher only inside `preview-search`: tests/unit/cli checks what the CLI loads at start.
    # compat only for `assay compat shims-path` (where the shims are; nothing of them runs).
    "cli": {
        "client",
        "rest",
        "protocol",
        "config",
        "context",
        "searcher",
        "files",
        "compat",
        "ports",
    },
}

MASTER_ROOMS: dict[str, set[str]] = {
    # The master's rooms and the rooms each may enter (through their doors: the names a room's
    # ``__init__`` exports), lowest first. The composition root (``master/_master.py``) and the
    # package's own ``__init__`` may enter every room.
    "kernel": set(),
    "identity": {"kernel"},
    "artifacts": {"kernel", "identity"},
    "queue": {"kernel"},
    "tasks": {"kernel", "identity", "queue"},
    "experiments": {"kernel", "identity", "artifacts", "queue"},
    "allocations": {"kernel", "queue", "tasks", "experiments"},
    "reads": {"kernel", "identity", "queue"},
}

PENDING: dict[str, str] = {}
"""Packages known to break a rule while their rewrite is under way. The tests of these are
expected to fail (strictly: once a package complies, its entry must go)."""

PRIVATE_PENDING: dict[str, str] = {}

SQL_METHODS = {
    "add",
    "add_all",
    "delete",
    "execute",
    "flush",
    "get",
    "merge",
    "query",
    "scalar",
    "scalars",
}
"""What a SQLAlchemy session is asked to do; only ``assay.db`` asks."""


@dataclass(frozen=True)
class Imported:
    module: str
    """The module imported, fully resolved (``assay.db`` for ``from assay import db``)."""
    line: int


def package_of(path: Path) -> str:
    """The assay sub-package a source file belongs to (``errors`` for errors.py, ``assay``
    for the root ``__init__``)."""
    rel = path.relative_to(SRC)
    if len(rel.parts) == 1:
        return "assay" if rel.name == "__init__.py" else rel.stem
    return rel.parts[0]


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(name: str) -> bool:
    parts = name.split(".")
    if parts[0] != "assay":
        return False
    base = SRC.parent.joinpath(*parts)
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


def imports_of(path: Path, tree: ast.AST | None = None) -> list[Imported]:
    tree = tree or ast.parse(path.read_text())
    here = _module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found: list[Imported] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [Imported(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.append(Imported(sub if _is_module(sub) else base, node.lineno))
                if not _is_module(sub) and alias.name.startswith("_"):
                    # A private name taken from another module counts as reaching into it.
                    found.append(Imported(sub, node.lineno))
    return found


def sources(package: str | None = None) -> Iterator[Path]:
    for path in sorted(SRC.rglob("*.py")):
        if package is None or package_of(path) == package:
            yield path


def _assay_package(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "assay":
        return None
    return parts[1] if len(parts) > 1 else "assay"


def _pending(package: str, why: dict[str, str]) -> list[object]:
    if package in why:
        return [pytest.param(package, marks=pytest.mark.xfail(reason=why[package], strict=True))]
    return [package]


def _params(packages: list[str], why: dict[str, str]) -> list[object]:
    return [p for package in packages for p in _pending(package, why)]


ALL_PACKAGES = sorted({package_of(p) for p in sources()})


# -- the reader itself --------------------------------------------------------------------------


def test_the_import_reader_sees_through_from_assay_import_and_relative_imports() -> None:
    path = SRC / "master" / "artifacts" / "_probe.py"
    code = (
        "from assay import db\n"
        "from assay.db import _models\n"
        "from ...db import experiments\n"
        "from . import _gc\n"
        "from assay.searcher import _private_helper\n"
        "import sqlalchemy.orm\n"
    )
    found = {i.module for i in imports_of(path, ast.parse(code))}
    assert {
        "assay.db",
        "assay.db._models",
        "assay.db.experiments",
        "assay.master.artifacts._gc",
        "assay.searcher._private_helper",
        "sqlalchemy.orm",
    } <= found


# -- layers -------------------------------------------------------------------------------------


def test_every_package_has_a_place_in_the_layers() -> None:
    assert set(ALL_PACKAGES) == set(ALLOWED), "add the package to ALLOWED and the docs' table"


@pytest.mark.parametrize("package", _params(sorted(ALLOWED), PENDING))
def test_package_imports_only_what_its_layer_may(package: str) -> None:
    may = ALLOWED[package] | {package, "errors", "assay"}  # the root: its version
    violations: dict[str, set[str]] = {}
    for path in sources(package):
        for imp in imports_of(path):
            other = _assay_package(imp.module)
            if other is not None and other not in may:
                violations.setdefault(str(path.relative_to(SRC)), set()).add(imp.module)
    assert not violations, f"{package} may import only {sorted(may)}: {violations}"


@pytest.mark.parametrize("package", _params([p for p in ALL_PACKAGES if p != "db"], PENDING))
def test_only_the_database_package_uses_sqlalchemy(package: str) -> None:
    violations = {
        str(path.relative_to(SRC)): sorted(
            {
                i.module
                for i in imports_of(path)
                if i.module.split(".")[0] in ("sqlalchemy", "alembic")
            }
        )
        for path in sources(package)
    }
    violations = {k: v for k, v in violations.items() if v}
    assert not violations, f"SQLAlchemy belongs to assay.db (use its repositories): {violations}"


def sql_calls(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, call) of each call of a session's SQL method: ``session.add(...)``,
    ``tx.session.execute(...)``."""
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = node.func.value
        name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")
        if name == "session" and node.func.attr in SQL_METHODS:
            found.append((node.lineno, f"session.{node.func.attr}"))
    return found


def test_the_sql_call_scan_finds_a_session_used_directly() -> None:
    code = "tx.session.add(row)\nsession.execute(stmt)\nexperiments.get(tx.session, 1)\n"
    assert sql_calls(ast.parse(code)) == [(1, "session.add"), (2, "session.execute")]


@pytest.mark.parametrize("package", ["master", "api"])
def test_the_master_and_the_api_build_no_sql_and_add_no_rows(package: str) -> None:
    violations = {
        str(path.relative_to(SRC)): sql_calls(ast.parse(path.read_text()))
        for path in sources(package)
    }
    violations = {k: v for k, v in violations.items() if v}
    assert not violations, f"ask a repository of assay.db instead: {violations}"


@pytest.mark.parametrize("package", _params(ALL_PACKAGES, PRIVATE_PENDING))
def test_no_private_module_is_imported_from_another_package(package: str) -> None:
    violations: dict[str, set[str]] = {}
    for path in sources(package):
        for imp in imports_of(path):
            other = _assay_package(imp.module)
            if other is None or other == package:
                continue
            private = [p for p in imp.module.split(".")[2:] if p.startswith("_")]
            if any(not (p.startswith("__") and p.endswith("__")) for p in private):
                violations.setdefault(str(path.relative_to(SRC)), set()).add(imp.module)
    assert not violations, (
        f"{package} reaches into another package's private modules (import what its "
        f"__init__ exports instead): {violations}"
    )


def package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in sources():
        me = package_of(path)
        for imp in imports_of(path):
            other = _assay_package(imp.module)
            if other is not None and other != me:
                graph.setdefault(me, set()).add(other)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (its nodes in order, the first repeated at the end), or None."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        for nxt in sorted(graph.get(node, ())):
            cycle = visit(nxt, [*path, node])
            if cycle is not None:
                return cycle
        done.add(node)
        return None

    for start in sorted(graph):
        cycle = visit(start, [])
        if cycle is not None:
            return cycle
    return None


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "d": {"a", "c"}}) is None


def test_no_two_packages_import_each_other() -> None:
    cycle = find_cycle(package_graph())
    assert cycle is None, f"package import cycle: {' -> '.join(cycle or [])}"


def names_taken_from(path: Path, module: str) -> set[str]:
    """The names ``path`` imports with ``from <module> import ...``."""
    return {
        alias.name
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and node.module == module and node.level == 0
        for alias in node.names
    }


def test_the_parts_of_the_master_never_reach_for_the_whole_master() -> None:
    """Each collaborator gets the narrow interface it needs; only the composition root (and
    the package's ``__init__``) knows :class:`Master`."""
    # The allocation kit (master/testing.py) checks a kind through a whole master, as a test.
    root = {"master/_master.py", "master/__init__.py", "master/testing.py"}
    reaching = sorted(
        str(path.relative_to(SRC))
        for path in sources("master")
        if str(path.relative_to(SRC)) not in root
        and (
            any(i.module == "assay.master._master" for i in imports_of(path))
            or "Master" in names_taken_from(path, "assay.master")
        )
    )
    assert not reaching, f"these parts import the whole master: {reaching}"


def room_of(path: Path) -> str | None:
    """The master's room a source file is in (None: the composition root or the package's
    ``__init__``)."""
    rel = path.relative_to(SRC / "master")
    return rel.parts[0] if len(rel.parts) > 1 else None


def _room_entered(module: str) -> tuple[str, bool] | None:
    """The room an import of ``module`` enters, and whether past its door (a private module)."""
    parts = module.split(".")
    if parts[:2] != ["assay", "master"] or len(parts) < 3 or parts[2].startswith("_"):
        return None
    return parts[2], any(p.startswith("_") for p in parts[3:])


def test_every_room_of_the_master_is_in_the_allow_list() -> None:
    rooms = {p.parent.name for p in (SRC / "master").glob("*/__init__.py")}
    assert rooms == set(MASTER_ROOMS), "add the room to MASTER_ROOMS and docs/architecture.md"


@pytest.mark.parametrize("room", sorted(MASTER_ROOMS))
def test_a_room_of_the_master_enters_only_the_rooms_below_it_and_only_by_their_doors(
    room: str,
) -> None:
    may = MASTER_ROOMS[room]
    violations: dict[str, set[str]] = {}
    for path in sources("master"):
        if room_of(path) != room:
            continue
        for imp in imports_of(path):
            entered = _room_entered(imp.module)
            if entered is None or entered[0] == room:
                continue
            other, past_door = entered
            if other not in may or past_door:
                violations.setdefault(str(path.relative_to(SRC)), set()).add(imp.module)
    assert not violations, (
        f"master/{room} may enter only {sorted(may)}, through what their __init__ exports: "
        f"{violations}"
    )


def test_the_composition_root_enters_the_rooms_by_their_doors() -> None:
    violations = {
        str(path.relative_to(SRC)): sorted(
            i.module for i in imports_of(path) if (_room_entered(i.module) or ("", False))[1]
        )
        for path in sources("master")
        if room_of(path) is None
    }
    violations = {k: v for k, v in violations.items() if v}
    assert not violations, f"import what the room's __init__ exports: {violations}"


def module_graph() -> dict[str, set[str]]:
    """Every module of ``assay`` and the assay modules it imports anywhere: at the top, inside
    functions, under ``TYPE_CHECKING``. ``from assay.x import name`` counts as an import of
    ``assay.x``; a package's ``__init__`` importing its own modules is an edge like any other."""
    graph: dict[str, set[str]] = {}
    for path in sources():
        me = _module_name(path)
        graph[me] = {
            i.module
            for i in imports_of(path)
            if i.module.split(".")[0] == "assay" and _is_module(i.module) and i.module != me
        }
    return graph


def test_no_module_of_assay_is_in_an_import_cycle() -> None:
    """No circle of modules, even one closed by an import inside a function or under
    ``TYPE_CHECKING``: a type lives where its owner lives, and what a lower module needs of a
    higher one it is given (a protocol, a callback)."""
    cycle = find_cycle(module_graph())
    assert cycle is None, f"module import cycle: {' -> '.join(cycle or [])}"


def levels(allowed: dict[str, set[str]]) -> list[list[str]]:
    """``allowed``'s nodes by layer: a node sits one above the highest it may import."""
    level: dict[str, int] = {}

    def of(node: str) -> int:
        if node not in level:
            below = [of(d) for d in allowed.get(node, ()) if d in allowed]
            level[node] = 1 + max(below, default=-1)
        return level[node]

    for node in allowed:
        of(node)
    return [sorted(n for n in allowed if level[n] == k) for k in range(max(level.values()) + 1)]


def layer_diagram() -> str:
    """The layers as docs/architecture.md shows them, made from ALLOWED and MASTER_ROOMS, so
    the page cannot drift from what this test enforces."""
    lines = ["```", "packages, lowest first (each imports only from layers below it):"]
    for k, names in enumerate(levels(ALLOWED)):
        lines.append(f"  {k:>2}  {'  '.join(names)}")
    lines += ["", "the master's rooms, lowest first (each enters only the rooms listed):"]
    for names in levels(MASTER_ROOMS):
        for name in names:
            may = ", ".join(sorted(MASTER_ROOMS[name])) or "-"
            lines.append(f"  {name:<12} {may}")
    lines.append("  (master/_master.py, the composition root, enters every room)")
    lines.append("```")
    return "\n".join(lines)


DOCS = SRC.parents[1] / "docs" / "architecture.md"
DIAGRAM = (
    "<!-- layers:start (made by tests/unit/test_architecture.py --write) -->",
    "<!-- layers:end -->",
)


def _docs_with_diagram(text: str) -> str:
    start, end = DIAGRAM
    head, _, rest = text.partition(start)
    _, _, tail = rest.partition(end)
    return f"{head}{start}\n{layer_diagram()}\n{end}{tail}"


def test_the_layer_diagram_in_the_docs_is_the_one_these_tests_enforce() -> None:
    text = DOCS.read_text()
    assert DIAGRAM[0] in text and DIAGRAM[1] in text, f"{DOCS.name} lost its diagram markers"
    assert text == _docs_with_diagram(text), (
        "docs/architecture.md shows other layers than ALLOWED/MASTER_ROOMS: run "
        "`python tests/unit/test_architecture.py --write`"
    )


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


def test_optuna_is_imported_by_a_searcher_that_needs_it_not_by_the_master_or_the_cli() -> None:
    # Half a second of every master's, agent's and command's start, for a searcher most
    # experiments never use.
    code = (
        "import sys, assay.api, assay.agent, assay.cli, assay.searcher\n"
        "before = 'optuna' in sys.modules\n"
        "assay.searcher.OptunaSource\n"
        "print(before, 'optuna' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"], out.stdout


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
    for path in sources():
        rel = path.relative_to(SRC)
        if rel == STATES_MODULE or any(rel.is_relative_to(p) for p in FROZEN):
            continue
        hits = state_literals(ast.parse(path.read_text()))
        if hits:
            found[str(rel)] = hits
    assert not found, f"use the enums of assay.protocol instead of these literals: {found}"


def test_the_protocol_package_needs_only_the_standard_library() -> None:
    outside: dict[str, list[str]] = {}
    for path in sources("protocol"):
        for imp in imports_of(path):
            top = imp.module.split(".")[0]
            if top == "assay":
                ok = imp.module == "assay.errors" or imp.module.startswith("assay.protocol")
            else:
                ok = top in sys.stdlib_module_names or top == "__future__"
            if not ok:
                outside.setdefault(path.name, []).append(imp.module)
    assert not outside, f"assay.protocol must import only the standard library: {outside}"


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        DOCS.write_text(_docs_with_diagram(DOCS.read_text()))
    else:
        print(layer_diagram())
