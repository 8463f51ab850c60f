"""Options' and arguments' values read without pydantic.

Typer 0.29 reads every value a parameter is given, its default included, through a pydantic
``TypeAdapter`` it builds for the parameter the first time (``typer._coercion``): importing
pydantic and building the adapter took longer than the rest of ``assay e list``. Here each
parameter of the kinds the commands take (text, whole numbers, numbers, paths, choices, flags,
and lists of these) reads its values itself, as Typer would; a value it cannot read that way, one
Typer refuses or might read otherwise, goes to Typer's own reading, which then refuses it (or
reads it) with its own words. So what a command accepts and how it refuses stay Typer's, and a
command given valid values never loads pydantic.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args, get_origin

from typer._click.exceptions import BadParameter
from typer._coercion import RuntimeParam, TypeDescriptor, build_runtime_param
from typer._param_types import (
    choice_coercion_annotation,
    coerce_cli_choice,
    coerce_cli_path,
    routes_to_path,
)
from typer.core import _TyperParameter
from typer.models import ParameterInfo

Reader = Callable[[Any, Any, Any], Any]
"""Reads one value (value, parameter, context), or raises for Typer to read it."""

# Values pydantic's lax mode reads exactly as int() and float() do; anything else (spaces, "_",
# "1e3", "inf", a digit of another script, a number too long) is left to it.
_INT = re.compile(r"-?[0-9]{1,18}")
_FLOAT = re.compile(r"-?[0-9]{1,15}(\.[0-9]{1,15})?")


class _NotPlain(Exception):
    """A value for Typer's own reading to decide."""


class _Plain(RuntimeParam):
    """One parameter's reading: ``read`` first, Typer's own for what it cannot read. (Not a
    dataclass of its own, as its base is: one compiles its methods when the module loads.)"""

    descriptor: TypeDescriptor
    read: Reader

    def __init__(self, descriptor: TypeDescriptor, read: Reader) -> None:
        super().__init__(parameter_info=descriptor.parameter_info, annotation=descriptor.annotation)
        object.__setattr__(self, "descriptor", descriptor)  # frozen, as its base
        object.__setattr__(self, "read", read)

    def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
        try:
            return self.read(value, param, ctx)
        except Exception:  # every doubt goes to Typer, which decides
            typers = build_runtime_param(self.descriptor)
            try:
                return typers._coerce_value(value, param=param, ctx=ctx)
            except BadParameter as refused:
                # pydantic's words ("Input should be a valid integer") name no value.
                if isinstance(value, str) and repr(value) not in refused.message:
                    raise BadParameter(
                        f"{refused.message} (got {value!r})", refused.ctx, refused.param
                    ) from refused
                raise


def _text(value: Any, param: Any, ctx: Any) -> Any:
    if not isinstance(value, str):
        raise _NotPlain
    return value


def _flag(value: Any, param: Any, ctx: Any) -> Any:
    # Typer reads a flag's bool itself; this sees a flag left out (None, read as None before
    # any reading) and a value from elsewhere, which Typer reads its own way.
    if not isinstance(value, bool):
        raise _NotPlain
    return value


def _within(number: Any, info: ParameterInfo) -> Any:
    if (info.min is not None and number < info.min) or (info.max is not None and number > info.max):
        raise _NotPlain  # refused, in Typer's words
    return number


def _whole(info: ParameterInfo) -> Reader:
    def read(value: Any, param: Any, ctx: Any) -> Any:
        if type(value) is int:
            return _within(value, info)
        if isinstance(value, str) and _INT.fullmatch(value):
            return _within(int(value), info)
        raise _NotPlain

    return read


def _number(info: ParameterInfo) -> Reader:
    def read(value: Any, param: Any, ctx: Any) -> Any:
        if type(value) in (int, float):
            return _within(float(value), info)
        if isinstance(value, str) and _FLOAT.fullmatch(value):
            return _within(float(value), info)
        raise _NotPlain

    return read


def _path(annotation: Any, info: ParameterInfo) -> Reader | None:
    # A plain Path only: a str or bytes path_type, or a Path of another class, is Typer's.
    if info.path_type is not None or annotation is not Path:
        return None

    def read(value: Any, param: Any, ctx: Any) -> Any:
        if not isinstance(value, str | Path) or not str(value) or "\0" in str(value):
            raise _NotPlain
        # A Path given, Typer checks the path (exists, a file...) without building one itself.
        return coerce_cli_path(Path(value), info, path_type=Path, param=param, ctx=ctx)

    return read


def _choice(choices: tuple[Any, ...], case_sensitive: bool) -> Reader:
    def read(value: Any, param: Any, ctx: Any) -> Any:
        return coerce_cli_choice(value, choices=choices, case_sensitive=case_sensitive, ctx=ctx)

    return read


def _listed(item: Reader) -> Reader:
    def read(value: Any, param: Any, ctx: Any) -> Any:
        values = value if isinstance(value, list | tuple) else [value]
        return [item(v, param, ctx) for v in values]

    return read


def _reader(annotation: Any, info: ParameterInfo) -> Reader | None:
    """How to read a value of ``annotation``; None for a kind left to Typer."""
    if get_origin(annotation) is list:
        (item,) = get_args(annotation) or (None,)
        read = _reader(item, info) if item is not None else None
        return _listed(read) if read is not None else None
    if get_origin(annotation) is not None:
        return None
    choice = choice_coercion_annotation(annotation, info)
    if choice is not None:
        return _choice(*choice)
    if annotation is str:
        return _text
    if annotation is bool:
        return _flag
    if annotation is int:
        return _whole(info) if not info.clamp else None
    if annotation is float:
        return _number(info) if not info.clamp else None
    if routes_to_path(annotation, info):
        return _path(annotation, info)
    return None


def plain_reading(descriptor: TypeDescriptor) -> RuntimeParam | None:
    """The reading of a parameter described by ``descriptor`` without pydantic; None when its
    kind is left to Typer."""
    info = descriptor.parameter_info
    if descriptor.file_annotation is not None or info.parser is not None:
        return None
    annotation = descriptor.annotation
    read = _reader(annotation, info)
    if read is None:
        return None
    return _Plain(descriptor, read)


def read_plainly_param(param: Any) -> None:
    """``param`` (a click parameter Typer built) reading its values without pydantic where it
    can."""
    if isinstance(param, _TyperParameter) and param._runtime_param is None:
        reading = plain_reading(param.type_descriptor)
        if reading is not None:
            param._runtime_param = reading


def read_plainly(command: Any) -> Any:
    """``command`` (a click command or group Typer built) with each of its parameters reading
    its values without pydantic where it can (see the module), ``--help`` included."""
    for param in getattr(command, "params", []):
        read_plainly_param(param)
    # Click makes the help option when it is first asked for (its names are the context's).
    made = command.get_help_option

    def get_help_option(ctx: Any) -> Any:
        option = made(ctx)
        read_plainly_param(option)
        return option

    command.get_help_option = get_help_option
    return command


__all__ = ["plain_reading", "read_plainly", "read_plainly_param"]
