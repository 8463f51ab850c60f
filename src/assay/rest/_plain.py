"""Answers a client reads without pydantic: standard dataclasses, read from JSON here.

Importing pydantic and building the validators of an answer took longer than all the rest of
``assay e list``. So the answers the command line reads on its common paths (an experiment, a
page of them, where a page is) are :class:`Answer` dataclasses, defined once, here in
``assay.rest`` as every wire shape is: the master builds them, and FastAPI checks what it
answers against them and describes them in the OpenAPI document through pydantic, which takes a
dataclass as it takes a model (the document is the one the models made); a client builds them
from an answer's JSON with :func:`read_answer`, on the standard library alone. An answer fits
here when its fields are JSON values, enums, lists and dicts of these, and other answers; one
that needs pydantic's checks (a request's limits and patterns) stays a model.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
from collections.abc import Callable, Mapping
from enum import Enum
from typing import (
    TYPE_CHECKING,
    Any,
    Literal,
    Self,
    TypeVar,
    Union,
    dataclass_transform,
    get_args,
    get_origin,
)
from typing import get_type_hints as _type_hints

from assay.errors import AssayError

if TYPE_CHECKING:
    # Only for the checker: a TypeVar bound by name compiles the name when it is made.
    A = TypeVar("A", bound="Answer")

WHY_WAITING = (
    "Why its queued work does not start, in one line (e.g. 'needs 4 slots a trial; the largest "
    "agent in pool 'default' has 2'); null when nothing of it waits."
)
"""The description of the one field that explains a wait (a job of the queue, an experiment, a
trial): ``rest.Waiting`` for a model, ``described(WHY_WAITING, default=None)`` for an answer."""


def described(
    description: str, *, default: Any = dataclasses.MISSING, default_factory: Any = None
) -> Any:
    """A field of an :class:`Answer` with the ``description`` its schema gives it (and a default,
    or a factory of its default: the schema shows the value the factory makes)."""
    metadata: dict[str, Any] = {"description": description}
    if default_factory is None:
        return dataclasses.field(default=default, metadata=metadata)
    # pydantic shows the default of a model's field, not what a factory would make: said here.
    metadata["json_schema_extra"] = {"default": default_factory()}
    return dataclasses.field(default_factory=default_factory, metadata=metadata)


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(described,))
class Answer:
    """Base of an answer read without pydantic: each subclass is a frozen dataclass whose fields
    are given by name (a subclass adds fields after its base's, with or without defaults).

    The methods a dataclass has (``__init__``, ``__eq__``, ``__hash__``, ``__repr__``, refusing
    changes) are this base's, written once: ``dataclasses`` compiles its own for each class,
    which for the dozen classes of an answer took as long as the rest of reading it."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # The fields only (what pydantic, ``fields()`` and ``replace()`` read): no method made.
        dataclasses.dataclass(init=False, repr=False, eq=False, kw_only=True)(cls)

    def __init__(self, **given: Any) -> None:
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            if f.name in given:
                value = given.pop(f.name)
            elif f.default is not dataclasses.MISSING:
                value = f.default
            elif f.default_factory is not dataclasses.MISSING:
                value = f.default_factory()
            else:
                raise TypeError(f"{type(self).__name__}() needs its field {f.name!r}")
            object.__setattr__(self, f.name, value)
        if given:
            raise TypeError(f"{type(self).__name__}() has no field {', '.join(map(repr, given))}")

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, f.name) for f in dataclasses.fields(self))  # type: ignore[arg-type]

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined, no-any-return]

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = (f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self))  # type: ignore[arg-type]
        return f"{type(self).__qualname__}({', '.join(shown)})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    def model_copy(self, *, update: Mapping[str, Any] | None = None) -> Self:
        """A copy with the fields in ``update`` changed, as a model's ``model_copy`` makes (the
        master changes models and these alike)."""
        return dataclasses.replace(self, **(update or {}))  # type: ignore[type-var]


Reader = Callable[[Any, str, list[str]], Any]
"""Reads one JSON value at a path, adding what does not fit to the problems given."""


def read_answer(shape: type[A], data: Any) -> A:
    """``shape`` built from ``data``, the decoded JSON of an answer, checked as a model checks
    an answer: fields it does not know are left out, and a field missing or of another type
    raises an :class:`AssayError` that says the master's version may differ (each problem is a
    note of the error, shown with its traceback)."""
    problems: list[str] = []
    built = _reader(shape)(data, "", problems)  # type: ignore[arg-type]
    if problems:
        error = AssayError(
            f"an answer of the master does not fit this client's {shape.__name__} "
            f"({len(problems)} problem(s)); is the master a different version of assay? "
            "(--debug shows them)"
        )
        for problem in problems:
            error.add_note(problem)
        raise error
    return built  # type: ignore[no-any-return]


def _at(path: str, name: object) -> str:
    return f"{path}.{name}" if path else str(name)


@functools.cache
def _reader(kind: Any) -> Reader:
    """How to read a JSON value as ``kind`` (a type, or a generic alias of one)."""
    origin = get_origin(kind)
    if kind is Any:
        return lambda value, path, problems: value
    if origin is Union or origin is types.UnionType:
        return _union(get_args(kind))
    if origin is list:
        return _list(_reader(get_args(kind)[0]))
    if origin is dict:
        key, item = get_args(kind)
        return _dict(_reader(key), _reader(item))
    if origin is Literal:
        return _literal(get_args(kind))
    if isinstance(kind, type) and issubclass(kind, Answer):
        return _answer(kind)
    if isinstance(kind, type) and issubclass(kind, Enum):
        return _enum(kind)
    if kind in (str, bool, int, float, type(None)):
        return _scalar(kind)
    raise TypeError(f"an Answer cannot hold a {kind!r}: make it a model, or its field simpler")


def _scalar(kind: type) -> Reader:
    def read(value: Any, path: str, problems: list[str]) -> Any:
        if kind is float and type(value) is int:
            return float(value)  # JSON writes 1.0 as 1
        if type(value) is kind:
            return value
        problems.append(f"{path or 'the answer'}: expected {kind.__name__}, got {value!r:.80}")
        return value

    return read


def _enum(kind: type[Enum]) -> Reader:
    def read(value: Any, path: str, problems: list[str]) -> Any:
        try:
            return kind(value)
        except ValueError:
            problems.append(f"{path}: {value!r:.80} is not a {kind.__name__}")
            return value

    return read


def _literal(values: tuple[Any, ...]) -> Reader:
    def read(value: Any, path: str, problems: list[str]) -> Any:
        if value not in values:
            problems.append(f"{path}: expected one of {values!r}, got {value!r:.80}")
        return value

    return read


def _union(kinds: tuple[Any, ...]) -> Reader:
    readers = [_reader(k) for k in kinds if k is not type(None)]
    optional = len(readers) < len(kinds)

    def read(value: Any, path: str, problems: list[str]) -> Any:
        if value is None and optional:
            return None
        first: list[str] = []
        for reader in readers:
            tried: list[str] = []
            built = reader(value, path, tried)
            if not tried:
                return built
            first = first or tried
        problems.extend(first)
        return value

    return read


def _list(item: Reader) -> Reader:
    def read(value: Any, path: str, problems: list[str]) -> Any:
        if type(value) is not list:
            problems.append(f"{path}: expected a list, got {value!r:.80}")
            return value
        return [item(v, _at(path, i), problems) for i, v in enumerate(value)]

    return read


def _dict(key: Reader, item: Reader) -> Reader:
    def read(value: Any, path: str, problems: list[str]) -> Any:
        if type(value) is not dict:
            problems.append(f"{path}: expected an object, got {value!r:.80}")
            return value
        return {key(k, path, problems): item(v, _at(path, k), problems) for k, v in value.items()}

    return read


def _answer(shape: type[Answer]) -> Reader:
    hints: dict[str, Any] = {}
    fields: list[tuple[str, bool]] = []

    def read(value: Any, path: str, problems: list[str]) -> Any:
        if not fields:
            # Read from the class the first time: a field's type may name a shape defined
            # after it in its module.
            hints.update(_type_hints(shape))
            missing = dataclasses.MISSING
            for f in dataclasses.fields(shape):  # type: ignore[arg-type]
                fields.append((f.name, f.default is missing and f.default_factory is missing))
        if type(value) is not dict:
            problems.append(f"{path or 'the answer'}: expected an object, got {value!r:.80}")
            return value
        found: dict[str, Any] = {}
        complete = True
        for name, required in fields:
            if name in value:
                found[name] = _reader(hints[name])(value[name], _at(path, name), problems)
            elif required:
                problems.append(f"{_at(path, name)}: missing")
                complete = False
        return shape(**found) if complete else value

    return read


def to_json(value: Any) -> Any:
    """``value`` (answers, lists and dicts of them, enums) as JSON's types, as the master wrote
    it; a float that is not finite as null, as pydantic writes one. Anything else is given back
    as it is."""
    if isinstance(value, Answer):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}  # type: ignore[arg-type]
    if isinstance(value, Enum):
        return to_json(value.value)
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {to_json(k): to_json(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class Pagination(Answer):
    total: int = described("How many match, over all pages.")
    limit: int
    offset: int


__all__ = ["WHY_WAITING", "Answer", "Pagination", "described", "read_answer", "to_json"]
