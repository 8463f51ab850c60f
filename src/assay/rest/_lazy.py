"""A package's re-exports, each imported from its module on first use.

The package lists them once, as imports under ``if TYPE_CHECKING:`` (what type checkers and
readers see); at run time that block is read back to know which module holds which name. A
command that needs three models of ``assay.rest`` then builds those, not all hundred and twenty
(pydantic does real work for each class it creates).
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

_FROM = re.compile(r"from (assay[\w.]*) import \(?([^()]*)\)?")


def _exports(init_file: str) -> dict[str, tuple[str, str]]:
    """``name -> (module, attribute)`` of the ``from M import a, b as c`` statements in the
    ``if TYPE_CHECKING:`` block of ``init_file``. Read as lines, not parsed: importing ``ast``
    and parsing took longer than the rest of a short command (the block holds imports only, as
    ruff writes them; a test checks the names read against the block's)."""
    text = Path(init_file).read_text(encoding="utf-8")
    block = text[text.index("\nif TYPE_CHECKING:\n") + 1 :].split("\n\n", 1)[0]
    statements: list[str] = []
    for line in block.splitlines()[1:]:
        if line.lstrip().startswith("from "):
            statements.append(line)
        else:  # a line of a parenthesized import
            statements[-1] += line
    found: dict[str, tuple[str, str]] = {}
    for statement in statements:
        matched = _FROM.fullmatch(statement.strip())
        if matched is None:
            raise ValueError(f"{init_file}: not an import of assay: {statement.strip()!r}")
        for name in matched[2].split(","):
            attribute, _, alias = name.strip().partition(" as ")
            if attribute:
                found[alias.strip() or attribute] = (matched[1], attribute)
    return found


def lazy_exports(
    package: str, init_file: str
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` (whose ``__init__`` is ``init_file``):
    ``package.Name`` imports the module its ``TYPE_CHECKING`` block names for it, once."""
    exports: dict[str, tuple[str, str]] = {}

    def table() -> dict[str, tuple[str, str]]:
        if not exports:
            exports.update(_exports(init_file))
        return exports

    def __getattr__(name: str) -> Any:  # noqa: N807 - the module hook's name
        target = table().get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(target[0]), target[1])
        # Set on the package: the next lookup is a plain attribute's.
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:  # noqa: N807 - the module hook's name
        return sorted(set(vars(sys.modules[package])) | set(table()))

    return __getattr__, __dir__


__all__ = ["lazy_exports"]
