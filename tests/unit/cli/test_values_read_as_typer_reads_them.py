"""Options' and arguments' values are read without pydantic (``assay.cli._params``), to the same
values Typer's own reading gives, and refused in Typer's own words."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import pytest
import typer
from typer._click import Context
from typer._click.exceptions import BadParameter
from typer._coercion import build_runtime_param

from assay.cli._app import command
from assay.cli._params import plain_reading, read_plainly


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.command()
    def one(
        existing: Annotated[Path, typer.Argument(exists=True, dir_okay=False)],
        count: int = 100,
        best: Annotated[int | None, typer.Option(min=1)] = None,
        share: Annotated[int, typer.Option(min=0, max=10)] = 5,
        weight: float = 1.0,
        name: str | None = None,
        where: Path | None = None,
        label: Annotated[list[str] | None, typer.Option()] = None,
        ids: Annotated[list[int] | None, typer.Option()] = None,
        flag: bool = False,
    ) -> None:
        """One."""

    @app.command()
    def two() -> None:
        """Two."""

    return app


VALUES: dict[str, list[Any]] = {
    "count": ["5", "0", "-3", "007", "+5", " 5", "5 ", "1_000", "5.0", "1e3", "abc", "", "\u0665",
              "9" * 30, 7, True, 2.0],
    "best": ["1", "0", "-1", "3", "x"],
    "share": ["0", "10", "11", "-1", "5"],
    "weight": ["0.5", "2", "-1.25", "1e-3", "inf", "nan", ".5", "5.", "x", "", 3, 2.5],
    "name": ["exp", "", " spaced ", "ünïcode", "[markup]"],
    "where": ["some/dir", ".", "", "a\0b", "/"],
    "label": [("a", "b"), (), ("x",), ["1", "2"]],
    "ids": [("1", "2"), ("1", "x"), (), ("-4",)],
    "flag": [True, False],
}  # fmt: skip


def _read(reading: Any, value: Any, param: Any, ctx: Any) -> tuple[str, Any]:
    try:
        return "value", reading.coerce(value, param=param, ctx=ctx)
    except BadParameter as exc:
        return "refused", exc.format_message()


@pytest.mark.parametrize("name", sorted(VALUES))
def test_each_value_is_read_to_what_typers_own_reading_gives(name: str) -> None:
    cmd = typer.main.get_command(_app()).commands["one"]  # type: ignore[attr-defined]
    param = next(p for p in cmd.params if p.name == name)
    ctx = Context(cmd)
    plain = plain_reading(param.type_descriptor)
    assert plain is not None, f"{name} is left to Typer"
    typers = build_runtime_param(param.type_descriptor)
    for value in VALUES[name]:
        mine, theirs = _read(plain, value, param, ctx), _read(typers, value, param, ctx)
        if theirs[0] == "refused" and isinstance(value, str) and repr(value) not in theirs[1]:
            # Typer's words, and the value that was given (pydantic's name none).
            theirs = ("refused", f"{theirs[1]} (got {value!r})")
        # repr: a NaN read is the same NaN, and 5 is not 5.0.
        assert repr(mine) == repr(theirs), value


def test_a_path_that_must_exist_is_refused_in_typers_words(tmp_path: Path) -> None:
    cmd = typer.main.get_command(_app()).commands["one"]  # type: ignore[attr-defined]
    param = next(p for p in cmd.params if p.name == "existing")
    ctx = Context(cmd)
    plain = plain_reading(param.type_descriptor)
    typers = build_runtime_param(param.type_descriptor)
    (tmp_path / "f").write_text("")
    for value in (str(tmp_path / "f"), str(tmp_path / "missing"), str(tmp_path)):
        assert _read(plain, value, param, ctx) == _read(typers, value, param, ctx)


def test_every_parameter_of_assay_reads_its_values_without_pydantic() -> None:
    left: list[str] = []

    def walk(group: Any, path: tuple[str, ...]) -> None:
        for param in group.params:
            if getattr(param, "_runtime_param", None) is None:
                left.append(f"{' '.join(path)} {param.name}")
        for name in getattr(group, "commands", {}):
            walk(group.commands[name], (*path, name))

    walk(command(), ("assay",))
    assert left == []


def test_the_help_option_reads_its_value_without_pydantic() -> None:
    cmd = read_plainly(typer.main.get_command(_app()).commands["two"])  # type: ignore[attr-defined]
    option = cmd.get_help_option(Context(cmd))
    assert option._runtime_param is not None
