"""Turning pydantic's validation errors into problems a person can act on.

Each pydantic error becomes an :class:`~assay.errors.ErrorDetail` whose path is dotted with list
indices (``hyperparameters.list_hparam[2]``) and whose message says what is wrong and what would
be right (``must be >= 1, got 0``; ``unknown key (did you mean max_trials?)``). Union tags, which
pydantic puts in its locations, are written ``<...>`` by our models and dropped from paths.
"""

from __future__ import annotations

import difflib
import types
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, Tag, TypeAdapter, ValidationError
from pydantic_core import ErrorDetails

from assay.config._base import ERROR_TYPE, TAG_ERROR_TYPE, show
from assay.errors import ErrorDetail, InvalidConfig

_TYPE_WORDS = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "string_type": "a string",
    "list_type": "a list",
    "tuple_type": "a list",
    "dict_type": "a map",
    "model_type": "a map",
    "model_attributes_type": "a map",
    "path_type": "a path",
}
_BOUNDS = {
    "greater_than_equal": (">=", "ge"),
    "greater_than": (">", "gt"),
    "less_than_equal": ("<=", "le"),
    "less_than": ("<", "lt"),
}


def format_path(loc: tuple[str | int, ...], prefix: str = "") -> str:
    """``("a", "<tag>", "b", 2)`` -> ``"a.b[2]"``, under ``prefix`` when given."""
    path = prefix
    for seg in loc:
        if isinstance(seg, int):
            path += f"[{seg}]"
        elif _is_tag(seg):
            continue
        else:
            path = f"{path}.{seg}" if path else seg
    return path


def _is_tag(seg: str | int) -> bool:
    return isinstance(seg, str) and seg.startswith("<") and seg.endswith(">")


def problems_from(exc: ValidationError, root: Any, prefix: str = "") -> list[ErrorDetail]:
    """Every problem in ``exc`` (raised validating against type ``root``), in input order.

    Two errors at the same path with the same message are reported once, and a list of valid
    keys is written out only the first time (a file of another format has many unknown keys).
    """
    details: list[ErrorDetail] = []
    seen: set[tuple[str, str]] = set()
    listed: set[str] = set()
    for err in exc.errors(include_url=False):
        detail = _detail(err, root, prefix)
        key = (detail.path, detail.message)
        if key in seen:
            continue
        seen.add(key)
        if detail.message.startswith(_VALID_KEYS):
            if detail.message in listed:
                detail = ErrorDetail(detail.path, _LISTED_ABOVE)
            listed.add(key[1])
        details.append(detail)
    return details


_VALID_KEYS = "unknown key; valid keys are: "
_LISTED_ABOVE = "unknown key (the valid keys are listed above)"


def _detail(err: ErrorDetails, root: Any, prefix: str) -> ErrorDetail:
    loc = tuple(err["loc"])
    kind = err["type"]
    value = err["input"]
    ctx: dict[str, Any] = dict(err.get("ctx") or {})
    if kind == "extra_forbidden":
        return ErrorDetail(format_path(loc, prefix), _unknown_key(loc, root))
    if len(loc) >= 2 and loc[-1] == "[key]":
        # pydantic's location is (..., the map, the bad key, "[key]").
        path = format_path(loc[:-2], prefix)
        if kind == "string_too_long":
            limit = ctx.get("max_length")
            return ErrorDetail(
                path,
                f"names may have at most {_number(limit)} characters, got one of "
                f"{len(str(value)):,} "
                f"({show(value, 40)})",
            )
        return ErrorDetail(path, f"keys must be strings, got {show(loc[-2])}")
    if kind == TAG_ERROR_TYPE:
        return _tag_problem(loc, value, ctx, prefix)
    return ErrorDetail(format_path(loc, prefix), _message(kind, value, ctx, err["msg"]))


def _message(kind: str, value: Any, ctx: dict[str, Any], msg: str) -> str:
    if kind == ERROR_TYPE:
        return str(ctx.get("message", msg))
    if kind == "missing":
        return "required"
    if kind in _TYPE_WORDS:
        return f"must be {_TYPE_WORDS[kind]}, got {show(value)}"
    if kind in _BOUNDS:
        op, key = _BOUNDS[kind]
        bound = ctx.get(key)
        if isinstance(bound, float) and bound.is_integer():
            bound = int(bound)  # pydantic makes the bounds of float fields floats: "<= 1.0"
        return f"must be {op} {_number(bound)}, got {show(value)}"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected')}, got {show(value)}"
    if kind == "too_short":
        n = ctx.get("min_length")
        return f"must have at least {n} item{'' if n == 1 else 's'}, got {show(value)}"
    if kind == "too_long":
        got = f"{len(value):,}" if isinstance(value, list | dict) else show(value)
        return f"must have at most {_number(ctx.get('max_length'))} items, got {got}"
    if kind == "string_too_long":
        got = f"{len(value):,}" if isinstance(value, str) else show(value)
        return f"must have at most {_number(ctx.get('max_length'))} characters, got {got}"
    if kind == "string_unicode":
        rule = "lone surrogates such as \\ud800 cannot be stored"
        return f"must be valid Unicode text: {rule}, got {show(value)}"
    if kind == "finite_number":
        return f"must be a finite number, got {show(value)}"
    if kind in ("value_error", "assertion_error"):
        text = msg.split(", ", 1)[1] if ", " in msg else msg
        return text
    return msg[:1].lower() + msg[1:] + f", got {show(value)}"


def _number(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)


def _tag_problem(
    loc: tuple[str | int, ...], value: Any, ctx: dict[str, Any], prefix: str
) -> ErrorDetail:
    key = str(ctx.get("key", "type"))
    what = str(ctx.get("what", "kind"))
    expected = str(ctx.get("expected", ""))
    if not isinstance(value, dict):
        return ErrorDetail(format_path(loc, prefix), f"must be a map, got {show(value)}")
    path = format_path((*loc, key), prefix)
    if value.get(key) is None:
        return ErrorDetail(path, f"required (one of: {expected})")
    return ErrorDetail(path, f"unknown {what} {show(value[key])}; expected one of: {expected}")


def _unknown_key(loc: tuple[str | int, ...], root: Any) -> str:
    valid = _valid_keys(root, loc[:-1])
    key = str(loc[-1])
    if not valid:
        return "unknown key"
    close = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
    if close:
        return f"unknown key (did you mean {close[0]}?)"
    return _VALID_KEYS + ", ".join(sorted(valid))


def _valid_keys(root: Any, loc: tuple[str | int, ...]) -> list[str]:
    node: Any = root
    for seg in loc:
        node = _step(node, seg)
        if node is None:
            return []
    model = _model_of(node)
    if model is None:
        return []
    keys: list[str] = []
    for name, field in model.model_fields.items():
        keys.append(field.alias or name)
    return keys


def _unwrap(tp: Any) -> Any:
    while True:
        if _is_alias(tp):
            tp = tp.__value__
        elif get_origin(tp) is Annotated:
            tp = get_args(tp)[0]
        else:
            return tp


def _is_alias(tp: Any) -> bool:
    # typing_extensions' and (3.12+) typing's TypeAliasType are different classes.
    return type(tp).__name__ == "TypeAliasType"


def _members(tp: Any) -> list[Any]:
    """The members of a union (``Annotated`` kept so their tags can be read), else ``[tp]``."""
    while _is_alias(tp) or (
        get_origin(tp) is Annotated and get_origin(_unwrap(tp)) in (Union, types.UnionType)
    ):
        tp = tp.__value__ if _is_alias(tp) else get_args(tp)[0]
    if get_origin(tp) in (Union, types.UnionType):
        return [m for m in get_args(tp) if m is not type(None)]
    return [tp]


def _tag_of(tp: Any) -> str | None:
    if get_origin(tp) is Annotated:
        for meta in get_args(tp)[1:]:
            if isinstance(meta, Tag):
                return meta.tag
    return None


def _step(tp: Any, seg: str | int) -> Any:
    members = _members(tp)
    if _is_tag(seg):
        for member in members:
            if _tag_of(member) == seg:
                return member
        return None
    if len(members) != 1:
        return None
    inner = _unwrap(members[0])
    model = _model_of(inner)
    if model is not None and isinstance(seg, str):
        for name, field in model.model_fields.items():
            if seg in (name, field.alias):
                return field.annotation
        return None
    origin, args = get_origin(inner), get_args(inner)
    if origin is list and isinstance(seg, int) and args:
        return args[0]
    if origin is dict and isinstance(seg, str) and len(args) == 2:
        return args[1]
    return None


def _model_of(tp: Any) -> type[BaseModel] | None:
    members = _members(tp)
    if len(members) != 1:
        return None
    inner = _unwrap(members[0])
    if isinstance(inner, type) and issubclass(inner, BaseModel):
        return inner
    return None


def validate_as(tp: Any, raw: Any, *, what: str) -> Any:
    """Validate ``raw`` against the type ``tp``; raise :class:`InvalidConfig` with every problem.

    ``what`` names the thing validated in the message: ``invalid master config: 2 problems``.
    """
    adapter = _adapter(tp)
    try:
        return adapter.validate_python(raw)
    except ValidationError as exc:
        raise invalid(what, problems_from(exc, tp)) from None


def invalid(what: str, details: list[ErrorDetail]) -> InvalidConfig:
    """The one error that lists every problem with a config."""
    n = len(details)
    return InvalidConfig(f"invalid {what}: {n} problem{'' if n == 1 else 's'}", details)


# Keyed by id, holding the type too so that the id is never reused while the entry lives.
_ADAPTERS: dict[int, tuple[Any, TypeAdapter[Any]]] = {}


def _adapter(tp: Any) -> TypeAdapter[Any]:
    # Building a TypeAdapter compiles a schema; configs are validated often (every submission,
    # every restart), so keep one per type.
    key = id(tp)
    if key not in _ADAPTERS:
        _ADAPTERS[key] = (tp, TypeAdapter(tp))
    return _ADAPTERS[key][1]
