"""Reading one JSON object of a message, naming the offending field in every refusal."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from assay.errors import InvalidRequest

T = TypeVar("T")


class _Missing:
    pass


MISSING: Any = _Missing()


def kind(value: object) -> str:
    """A value's JSON kind, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


class Fields:
    """The fields of the JSON object ``raw`` found at ``where`` (a dotted path, or a name such
    as ``hello``). Each accessor returns a field of the named type or raises
    :class:`InvalidRequest` saying which field, what it was and what it must be."""

    def __init__(self, raw: object, where: str) -> None:
        # A dict first: the check against the abstract Mapping costs more, and every field of
        # every message a large cluster's agents send is read this way (B13).
        if not isinstance(raw, dict) and not isinstance(raw, Mapping):
            raise InvalidRequest(f"{where}: must be an object, got {kind(raw)}")
        self.raw: Mapping[str, Any] = raw
        self.where = where

    def path(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def _get(self, key: str, default: Any) -> Any:
        value = self.raw.get(key)
        if value is None:
            if default is MISSING:
                raise InvalidRequest(f"{self.path(key)}: required")
            return default
        return value

    def _wrong(self, key: str, value: object, expected: str) -> InvalidRequest:
        return InvalidRequest(f"{self.path(key)}: must be {expected}, got {kind(value)}")

    def text(self, key: str, default: Any = MISSING) -> Any:
        value = self._get(key, default)
        if value is default:
            return value
        if not isinstance(value, str):
            raise self._wrong(key, value, "a string")
        return value

    def integer(self, key: str, default: Any = MISSING, *, minimum: int | None = None) -> Any:
        value = self._get(key, default)
        if value is default:
            return value
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._wrong(key, value, "an integer")
        if minimum is not None and value < minimum:
            raise InvalidRequest(f"{self.path(key)}: must be an integer >= {minimum}, got {value}")
        return value

    def number(self, key: str, default: Any = MISSING) -> Any:
        value = self._get(key, default)
        if value is default:
            return value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._wrong(key, value, "a number")
        return float(value)

    def flag(self, key: str, default: Any = MISSING) -> Any:
        value = self._get(key, default)
        if value is default:
            return value
        if not isinstance(value, bool):
            raise self._wrong(key, value, "true or false")
        return value

    def mapping(self, key: str, default: Any = MISSING) -> Any:
        value = self._get(key, default)
        if value is default:
            return value
        if not isinstance(value, Mapping):
            raise self._wrong(key, value, "an object")
        return dict(value)

    def items(self, key: str, default: Any = MISSING) -> Any:
        value = self._get(key, default)
        if value is default:
            return value
        if not isinstance(value, list | tuple):
            raise self._wrong(key, value, "a list")
        return list(value)

    def texts(self, key: str) -> list[str]:
        values = self.items(key, [])
        for i, item in enumerate(values):
            if not isinstance(item, str):
                raise InvalidRequest(f"{self.path(key)}[{i}]: must be a string, got {kind(item)}")
        return [str(item) for item in values]
