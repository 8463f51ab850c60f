"""``assay.rest`` imports a model's module when the model is first used; every name it exports
must still resolve, from the one list its ``TYPE_CHECKING`` block gives."""

from __future__ import annotations

import subprocess
import sys

import pytest

from assay import rest
from assay.rest import _lazy


def test_every_exported_name_resolves_to_the_object_of_its_module() -> None:
    table = _lazy._exports(rest.__file__)
    eager = {"AllocationState", "ExperimentState", "PreemptReason", "TaskState", "TrialState"}
    assert set(table) | eager == set(rest.__all__)
    for name, (module, attr) in table.items():
        assert getattr(rest, name) is getattr(sys.modules[module], attr), name
    assert rest.MAX_TENSORBOARD_TRIALS == sys.modules["assay.rest._tensorboards"].MAX_TRIALS


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match=r"has no attribute 'Nope'"):
        _ = rest.Nope  # type: ignore[attr-defined]
    assert "Experiment" in dir(rest)


def test_using_one_model_imports_its_module_and_not_the_others() -> None:
    code = (
        "import sys; from assay.rest import ExperimentList, TrialList; "
        "print(sorted(m for m in sys.modules if m.startswith('assay.rest.')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = ["_common", "_experiments", "_lazy", "_plain", "_trials"]
    assert done.stdout.strip() == str([f"assay.rest.{name}" for name in loaded])


def test_using_an_answer_read_without_pydantic_imports_no_pydantic() -> None:
    code = (
        "import sys; from assay.rest import ExperimentList, SortOrder; "
        "print(sorted(m for m in sys.modules if m.startswith(('assay.rest.', 'pydantic'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == str(
        ["assay.rest._experiments", "assay.rest._lazy", "assay.rest._plain", "assay.rest._sorts"]
    )


def test_the_block_read_as_lines_holds_the_names_a_parser_reads_in_it() -> None:
    import ast
    from pathlib import Path

    parsed: dict[str, tuple[str, str]] = {}
    for node in ast.parse(Path(rest.__file__).read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom) and statement.module
                for alias in statement.names:
                    parsed[alias.asname or alias.name] = (statement.module, alias.name)
    assert _lazy._exports(rest.__file__) == parsed
    assert len(parsed) > 100
